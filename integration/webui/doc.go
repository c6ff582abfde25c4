// Package webui holds the reference server's web UI test and nothing else:
// one scenario (bob is refused for lacking realm management; alice signs
// in through the realm chooser, opens the department tree of Acme EU, a
// user's effective roles, the client orders-api and the evaluator, runs a
// DENY and a GRANT, and signs out) run by two drivers. It lives in the
// integration module so that chromedp and x/net never enter the library's
// go.mod.
//
//   - chromium: headless Chromium, driven over the DevTools protocol by
//     chromedp, clicks, types and reads the rendered pages.
//   - http: net/http with a cookie jar, following redirects, submits the
//     forms of the served HTML (their action, method, hidden fields such as
//     the CSRF token, field names, a select's options) with a browser's
//     Origin and Accept headers, and reads the pages' text by the same ids
//     and classes the browser's selectors name. It runs no script and
//     renders nothing.
//
// Chromium (Debian's package chromium, or Chrome) is looked up as
// chromium, chromium-browser, google-chrome and google-chrome-stable on
// PATH; ORGAUTHZ_CHROMIUM names the executable instead, and one that is not
// an executable fails the test. With Chromium both drivers run, as
// subtests. Without it the http driver runs alone and the test log (go
// test -v) says so; with ORGAUTHZ_REQUIRE_CHROMIUM=1, as .ci/run sets it
// (installing chromium with apt-get when missing), a missing Chromium
// fails the test with the command that installs it, so CI proves the real
// browser.
//
// With ORGAUTHZ_WEBUI_SCREENSHOTS=dir the chromium driver saves a PNG of
// each main page in dir; docs/webui-*.png were made so:
//
//	ORGAUTHZ_WEBUI_SCREENSHOTS=$PWD/docs go test ./integration/webui
package webui
