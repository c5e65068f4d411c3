package loopback

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	for _, h := range []string{"127.0.0.1", "127.0.0.2", "::1", "localhost"} {
		if err := Check(h); err != nil {
			t.Errorf("Check(%q) = %v", h, err)
		}
	}
	for _, h := range []string{"0.0.0.0", "192.0.2.1", "example.com", ""} {
		if err := Check(h); err == nil {
			t.Errorf("Check(%q) took a host off loopback", h)
		}
	}
}

// TestGroup: handlers listen on consecutive ports from the one given, a
// held request sees Stopping when the context ends, and Done follows.
func TestGroup(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	g := New(ctx)
	held := make(chan struct{})
	hs := []http.Handler{
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "a") }),
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(held)
			<-g.Stopping()
		}),
	}
	urls, err := g.Serve("127.0.0.1", port, []string{"a", "b"}, hs)
	if err != nil {
		t.Skipf("ports %d and %d not both free here: %v", port, port+1, err)
	}
	if !strings.HasSuffix(urls[0], ":"+strconv.Itoa(port)) || !strings.HasSuffix(urls[1], ":"+strconv.Itoa(port+1)) {
		t.Fatalf("urls %v, want ports %d and %d", urls, port, port+1)
	}
	resp, err := http.Get(urls[0])
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "a" {
		t.Fatalf("first handler answered %q", b)
	}
	go http.Get(urls[1])
	<-held
	cancel()
	select {
	case <-g.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the group did not stop after its context ended")
	}
	g.Stop() // a second stop returns at once
}

// TestServeError: a listener that cannot be had stops the group and names
// the handler; nothing stays listening.
func TestServeError(t *testing.T) {
	busy := httptest.NewServer(http.NotFoundHandler())
	defer busy.Close()
	port := busy.Listener.Addr().(*net.TCPAddr).Port
	g := New(context.Background())
	_, err := g.Serve("127.0.0.1", port, []string{"engine-x"}, []http.Handler{http.NotFoundHandler()})
	if err == nil || !strings.Contains(err.Error(), "engine-x") {
		t.Fatalf("err %v, want one naming engine-x", err)
	}
	select {
	case <-g.Done():
	default:
		t.Fatal("the group is not done after a failed Serve")
	}
	if _, err := New(context.Background()).Serve("192.0.2.1", 0, []string{"x"}, []http.Handler{http.NotFoundHandler()}); err == nil {
		t.Fatal("a host off loopback was served")
	}
}
