// Package signerid hands internal/transport the identity of a
// *dpop.Signer's signer, the one its bound of signatures at once is kept
// under, without adding a name to package dpop's API: dpop sets Of when
// it is initialised, and transport, which imports dpop, calls it.
//
// It cannot name *dpop.Signer (dpop imports it): Of takes the Signer as
// an any.
package signerid

// Of returns the identity of signer, a non-nil *dpop.Signer NewSigner
// built: a comparable value, the same for every Signer of one signer and
// different for Signers of different ones, whatever public key they claim.
// It is set by package dpop's initialisation, before any caller that
// imports dpop runs, and is safe for concurrent use.
var Of func(signer any) any
