package webui_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromiumEnv names an executable to use as the browser; chromiumNames are
// looked up on PATH when it is unset.
const chromiumEnv = "ORGAUTHZ_CHROMIUM"

var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// errNoChromium is no browser on PATH (and none named).
var errNoChromium = errors.New("no chromium, chromium-browser, google-chrome or google-chrome-stable on PATH")

// findChromium returns the browser's path: ORGAUTHZ_CHROMIUM when set
// (which must then be an executable: naming one that is not is a mistake
// to fix, never a reason to fall back), else the first of chromiumNames on
// PATH, else errNoChromium.
func findChromium() (string, error) {
	if p := os.Getenv(chromiumEnv); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("%s=%s is not an executable (%w): point it at a Chromium or Chrome, or unset it to look one up on PATH", chromiumEnv, p, err)
		}
		return p, nil
	}
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errNoChromium
}

// chromiumDriver drives a headless Chromium of its own over the DevTools
// protocol.
type chromiumDriver struct {
	t     *testing.T
	base  string
	tab   context.Context
	shots string
}

// newChromium starts the browser at exec (a fresh profile, no sandbox,
// which a container's root user cannot have) for pages of base; it ends
// with the test. A page that never shows what the test waits for fails it
// within two minutes rather than hanging. With shots set, screenshot
// saves PNGs there.
func newChromium(t *testing.T, exec, base, shots string) *chromiumDriver {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exec),
		chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 760),
	)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	tab, tcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(tcancel)
	require.NoError(t, chromedp.Do(tab), "starting %s", exec)
	return &chromiumDriver{t: t, base: base, tab: tab, shots: shots}
}

func (d *chromiumDriver) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	d.t.Helper()
	require.NoError(d.t, chromedp.Do(d.tab, steps...), what)
}

func field(form, name string) chromedp.Search {
	return chromedp.Search(`#` + form + ` [name=` + name + `]`)
}

func (d *chromiumDriver) open(path string, until sel) {
	d.t.Helper()
	d.do("open "+path, chromedp.Navigate(d.base+path), chromedp.WaitVisible(until.query))
}

func (d *chromiumDriver) typeIn(form, name, value string) {
	d.t.Helper()
	d.do("type into "+form+" "+name, chromedp.SendKeys(field(form, name), value))
}

func (d *chromiumDriver) choose(form, name, value string) {
	d.t.Helper()
	d.do("choose "+form+" "+name, chromedp.SetValue(field(form, name), value))
}

func (d *chromiumDriver) submit(form string, until sel) {
	d.t.Helper()
	d.do("submit "+form,
		chromedp.Click(chromedp.Search(`#`+form+` button[type=submit]`)),
		chromedp.WaitVisible(until.query))
}

func (d *chromiumDriver) click(s, until sel) {
	d.t.Helper()
	d.do("click "+s.String(), chromedp.Click(s.query), chromedp.WaitVisible(until.query))
}

func (d *chromiumDriver) text(s sel) string {
	d.t.Helper()
	v, err := chromedp.Run(d.tab, chromedp.Text(s.query))
	require.NoError(d.t, err, "read %s", s)
	return v
}

func (d *chromiumDriver) location() string {
	d.t.Helper()
	u, err := chromedp.Run(d.tab, chromedp.Location())
	require.NoError(d.t, err)
	return u
}

func (d *chromiumDriver) screenshot(name string) {
	d.t.Helper()
	if d.shots == "" {
		return
	}
	png, err := chromedp.Run(d.tab, chromedp.FullScreenshot(100))
	require.NoError(d.t, err, "screenshot %s", name)
	require.NoError(d.t, os.WriteFile(filepath.Join(d.shots, "webui-"+name+".png"), png, fs.FileMode(0o644)))
}
