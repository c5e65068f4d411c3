// Package loopback serves HTTP handlers on loopback listeners, one port
// each, until a context ends or the group is stopped: the simulator's
// engines and a replayed recording's targets.
package loopback

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Check rejects a host that is not a loopback address or "localhost".
func Check(host string) error {
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen host %q is not a loopback address", host)
	}
	return nil
}

// Group is a set of HTTP servers that stop together.
type Group struct {
	stop chan struct{}
	once sync.Once
	done chan struct{}
}

// New is a group that stops when ctx ends or Stop is called.
func New(ctx context.Context) *Group {
	g := &Group{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		select {
		case <-ctx.Done():
		case <-g.stop:
		}
		g.once.Do(func() { close(g.stop) })
	}()
	return g
}

// Stopping is closed when the group begins to stop: handlers holding a
// request end it then.
func (g *Group) Stopping() <-chan struct{} { return g.stop }

// Done is closed once every server has stopped (at once for a group that
// never served).
func (g *Group) Done() <-chan struct{} { return g.done }

// Stop stops the group and waits for its servers.
func (g *Group) Stop() {
	g.once.Do(func() { close(g.stop) })
	<-g.done
}

// Serve listens on host for each handler (names[i] names handlers[i] in
// errors), on port+i when port > 0, else on a free port, and serves them
// until the group stops; it returns their base URLs (http://HOST:PORT) in
// order. On an error nothing listens and the group is stopped. Call it
// once (Serve or ServeAt).
func (g *Group) Serve(host string, port int, names []string, handlers []http.Handler) ([]string, error) {
	addrs := make([]string, len(handlers))
	for i := range handlers {
		p := 0
		if port > 0 {
			p = port + i
		}
		addrs[i] = net.JoinHostPort(host, strconv.Itoa(p))
	}
	return g.ServeAt(addrs, names, handlers)
}

// ServeAt is Serve with each handler's own HOST:PORT (port 0: a free one);
// every host must be loopback.
func (g *Group) ServeAt(addrs, names []string, handlers []http.Handler) ([]string, error) {
	for i, a := range addrs {
		h, _, err := net.SplitHostPort(a)
		if err == nil {
			err = Check(h)
		}
		if err != nil {
			g.abandon()
			return nil, fmt.Errorf("listen for %s: %w", names[i], err)
		}
	}
	var lns []net.Listener
	var urls []string
	for i, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			g.abandon()
			return nil, fmt.Errorf("listen for %s on %s: %w", names[i], a, err)
		}
		lns = append(lns, ln)
		urls = append(urls, "http://"+ln.Addr().String())
	}
	servers := make([]*http.Server, len(handlers))
	var wg sync.WaitGroup
	for i, h := range handlers {
		servers[i] = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = servers[i].Serve(lns[i]) // ErrServerClosed on shutdown
		}()
	}
	go func() {
		<-g.stop
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, hs := range servers {
			if hs.Shutdown(sctx) != nil {
				hs.Close()
			}
		}
		wg.Wait()
		close(g.done)
	}()
	return urls, nil
}

// abandon stops a group that serves nothing.
func (g *Group) abandon() {
	g.once.Do(func() { close(g.stop) })
	close(g.done)
}
