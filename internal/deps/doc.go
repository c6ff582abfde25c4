// Package deps holds a test only: it keeps the library module's go.mod to
// what the README's "What it stands on" table names. Every requirement of
// that go.mod, test-only or not, lands in the module graph of every
// program that imports pep, so a test that needs another library belongs in
// the nested module integration/, and a new requirement of the library
// itself is a decision the table explains.
package deps
