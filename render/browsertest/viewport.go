package browsertest

import (
	"context"

	"github.com/chromedp/chromedp"
)

// SetViewport sizes the page's viewport to width × height CSS pixels, as
// a window of that size shows it.
func (p *Page) SetViewport(width, height int64) error {
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.EmulateViewport(width, height))
	return err
}

// Viewshot returns a PNG of what the viewport shows.
func (p *Page) Viewshot() ([]byte, error) {
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	return chromedp.Run(ctx, chromedp.CaptureScreenshot())
}
