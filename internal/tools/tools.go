//go:build tools

// Package tools pins the module's dependencies while the packages that use
// them are being written; it is never built.
package tools

import (
	_ "github.com/go-jose/go-jose/v4"
	_ "github.com/go-jose/go-jose/v4/jwt"
	_ "github.com/hashicorp/go-retryablehttp"
	_ "github.com/hashicorp/golang-lru/v2"
	_ "github.com/jarcoal/httpmock"
	_ "github.com/lestrrat-go/jwx/v3/jwk"
	_ "github.com/lestrrat-go/jwx/v3/jws"
	_ "github.com/lestrrat-go/jwx/v3/jwt"
	_ "github.com/stretchr/testify/assert"
	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/goleak"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/sync/singleflight"
)
