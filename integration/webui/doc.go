// Package webui holds the reference server's web UI test in a real browser
// and nothing else: headless Chromium, driven over the DevTools protocol by
// chromedp, signs in through the server's login form, opens a department
// tree, a client and the evaluator, runs evaluations and checks what the
// pages show. It lives in the integration module so that chromedp never
// enters the library's go.mod.
//
// The test needs Chromium (Debian's package chromium, or Chrome):
// ORGAUTHZ_CHROMIUM names the executable, else chromium, chromium-browser,
// google-chrome and google-chrome-stable are looked up on PATH. Without one
// the test fails and says how to install it: it is never skipped. .ci/run
// installs it with apt-get when missing.
//
// With ORGAUTHZ_WEBUI_SCREENSHOTS=dir it saves a PNG of each main page in
// dir; docs/webui-*.png were made so:
//
//	ORGAUTHZ_WEBUI_SCREENSHOTS=$PWD/docs go test ./integration/webui
package webui
