package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start runs the binary's run on a free port and returns its base URL and a
// function that stops it and returns run's error.
func start(t *testing.T, args ...string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	require.True(t, sc.Scan(), "the binary prints its base URL")
	base := strings.TrimPrefix(sc.Text(), "mockserver listening on ")
	go func() {
		for sc.Scan() { // drain the rest of the output
		}
	}()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(15 * time.Second):
			t.Fatal("run did not return after cancellation")
			return nil
		}
	}
	return base, stop
}

func get(t *testing.T, u string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestRunWithAcmeFixture(t *testing.T) {
	base, stop := start(t, "-fixture", "../../../examples/fixtures/acme.json", "-admin-secret", "s3cret")
	require.True(t, strings.HasPrefix(base, "http://127.0.0.1:"), base)

	resp := get(t, base+"/realms/acme/.well-known/openid-configuration")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var doc map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	require.Equal(t, base+"/realms/acme", doc["issuer"])

	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"platform-admin"}, "client_secret": {"s3cret"}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/realms/master/protocol/openid-connect/token", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	tr, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	tr.Body.Close()
	require.Equal(t, http.StatusOK, tr.StatusCode, "-admin-secret overrides the fixture's secret")

	require.NoError(t, stop())
	_, err = http.Get(base + "/realms/acme/.well-known/openid-configuration") //nolint:noctx // the server is gone
	require.Error(t, err)
}

func TestRunPrintsGeneratedSecret(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var out strings.Builder
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, pw, io.Discard); pw.Close() }()
	sc := bufio.NewScanner(pr)
	for range 2 {
		require.True(t, sc.Scan())
		out.WriteString(sc.Text() + "\n")
	}
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	require.NoError(t, <-done)
	require.Regexp(t, `platform-admin client secret \(master realm\): \S{20,}`, out.String())
}

func TestRunRefusesBadInput(t *testing.T) {
	for name, args := range map[string][]string{
		"missing fixture": {"-addr", "127.0.0.1:0", "-fixture", "does-not-exist.json"},
		"bad issuer":      {"-addr", "127.0.0.1:0", "-issuer", "ftp://x"},
		"bad flag":        {"-nope"},
		"stray argument":  {"-addr", "127.0.0.1:0", "extra"},
	} {
		t.Run(name, func(t *testing.T) {
			require.Error(t, run(t.Context(), args, io.Discard, io.Discard))
		})
	}
}
