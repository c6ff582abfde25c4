// Package telemetry holds tests only: pep's and authzen's spans and
// metrics as OpenTelemetry's SDK records them, and what the SDK costs an
// uncached call (BenchmarkUncachedCheck). It lives in the integration
// module so that the SDK stays out of the library's own go.mod: the
// library imports the OpenTelemetry API only.
package telemetry
