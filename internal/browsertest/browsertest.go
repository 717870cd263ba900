// Package browsertest starts a real headless Chromium for the tests of
// askpoint's pages (chromedp) and runs browser actions bounded in time,
// failing with the page the browser shows. Without Chromium a test skips,
// saying so, or fails when CI is set.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium is the browser's path; it skips the test when there is none
// (fails it when CI is set).
func Chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("the browser tests need Chromium, and CI is set: install it (apt-get install -y chromium)")
	}
	t.Skip("SKIP: the browser tests need Chromium (apt-get install -y chromium); none found on PATH")
	return ""
}

// New starts a headless Chromium with a fresh profile and a window of w by
// h pixels; it is stopped when the test ends.
func New(t *testing.T, w, h int) context.Context {
	t.Helper()
	path := Chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(w, h),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	return ctx
}

// Do runs browser actions, bounded in time; what names them in a failure.
func Do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, Shown(ctx))
	}
}

// Val runs one browser action that returns a value, bounded in time.
func Val[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, Shown(ctx))
	}
	return v
}

// Shown says which page the browser shows, for failures.
func Shown(ctx context.Context) string {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(c, chromedp.Location())
	html, _ := chromedp.Run(c, chromedp.OuterHTML(chromedp.CSS("body")))
	return "at " + loc + ":\n" + html
}
