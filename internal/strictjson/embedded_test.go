package strictjson

// Embedded structs, read as encoding/json reads them (its typeFields and
// dominantField). The first two cases were found by the a-json4 attack
// (issue 25).

import (
	"encoding/json"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cycleA and CycleB embed each other through pointers, as encoding/json
// allows (its typeFields enters each struct type once).
type cycleA struct {
	*CycleB
	A int `json:"a"`
}

type CycleB struct {
	*cycleA
	B int `json:"b"`
}

// TestUnmarshalTakesMutuallyEmbeddingStructs: Unmarshal reads a struct that
// embeds itself, or two that embed each other, as encoding/json does,
// where following the embeddings without remembering the types entered
// would recurse until the goroutine's stack is exhausted: a fatal error no
// recover catches. It runs in a child process (with a 32 MiB stack limit)
// so that such a crash fails this test instead of ending the test binary.
func TestUnmarshalTakesMutuallyEmbeddingStructs(t *testing.T) {
	const body = `{"a":1,"b":2}`
	if os.Getenv("STRICTJSON_CYCLE_CHILD") == "1" {
		debug.SetMaxStack(32 << 20)
		var want cycleA
		require.NoError(t, json.Unmarshal([]byte(body), &want))
		var got cycleA
		require.NoError(t, Unmarshal([]byte(body), &got))
		require.Equal(t, want, got)
		require.ErrorIs(t, Unmarshal([]byte(`{"a":1,"A":2}`), new(cycleA)), ErrAmbiguousMember)
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestUnmarshalTakesMutuallyEmbeddingStructs$")
	cmd.Env = append(os.Environ(), "STRICTJSON_CYCLE_CHILD=1")
	out, err := cmd.CombinedOutput()
	first, _, _ := strings.Cut(string(out), "\n\n")
	require.NoError(t, err, "Unmarshal into a type encoding/json decodes failed or crashed the process:\n%s", first)
}

type methodA struct {
	Method string // untagged: its JSON name is "Method" (a repeated json tag would trip go vet)
}

type methodB struct {
	Method string
}

type taggedMethod struct {
	Verb string `json:"Method"`
}

type deepMethod struct{ methodA }

// closedAmbiguous is a Closed object whose two embedded structs both name
// a field "Method" at one depth, untagged: encoding/json's dominantField
// drops the name, so it decodes {"Method": ...} into nothing.
type closedAmbiguous struct {
	methodA
	methodB
}

func (closedAmbiguous) ClosedJSONObject() {}

// openAmbiguous is closedAmbiguous without Closed.
type openAmbiguous struct {
	methodA
	methodB
}

// taggedWins has two "Method" fields at one depth, one of them tagged: the
// tagged one is the field.
type taggedWins struct {
	methodA
	taggedMethod
}

func (taggedWins) ClosedJSONObject() {}

// shallowWins has "Method" at depths 1 and 2: the shallower is the field.
type shallowWins struct {
	methodB
	deepMethod
}

func (shallowWins) ClosedJSONObject() {}

type deepMethod2 struct{ methodA }

// twiceEmbedded embeds methodA at one depth through two paths, which
// encoding/json enters once: its fields are ambiguous all the same.
type twiceEmbedded struct {
	deepMethod
	deepMethod2
}

func (twiceEmbedded) ClosedJSONObject() {}

// TestUnmarshalEmbeddedFieldsAsEncodingJSON: a name that encoding/json
// drops as ambiguous (two fields of one depth, neither or both tagged) is
// no field: a Closed object refuses it as unknown rather than accept a
// member encoding/json would silently drop (Closed exists so that no
// member is dropped: "ignoring it would decide as if the call had no
// method", mockserver/decisions.go). Where encoding/json does pick a field
// (the shallowest, then the tagged one), Unmarshal reads what it reads.
func TestUnmarshalEmbeddedFieldsAsEncodingJSON(t *testing.T) {
	const body = `{"Method":"DELETE"}`
	t.Run("ambiguous in a Closed object", func(t *testing.T) {
		var v closedAmbiguous
		require.ErrorIs(t, Unmarshal([]byte(body), &v), ErrUnknownMember)
		require.Equal(t, closedAmbiguous{}, v)
	})
	t.Run("ambiguous in an open object is ignored, as encoding/json ignores it", func(t *testing.T) {
		var got, want openAmbiguous
		require.NoError(t, json.Unmarshal([]byte(body), &want))
		require.NoError(t, Unmarshal([]byte(body), &got))
		require.Equal(t, want, got)
		require.Equal(t, openAmbiguous{}, got, "encoding/json drops the ambiguous member")
	})
	t.Run("the tagged field of one depth", func(t *testing.T) {
		var got, want taggedWins
		require.NoError(t, json.Unmarshal([]byte(body), &want))
		require.NoError(t, Unmarshal([]byte(body), &got))
		require.Equal(t, want, got)
		require.Equal(t, "DELETE", got.Verb)
	})
	t.Run("the shallowest field", func(t *testing.T) {
		var got, want shallowWins
		require.NoError(t, json.Unmarshal([]byte(body), &want))
		require.NoError(t, Unmarshal([]byte(body), &got))
		require.Equal(t, want, got)
		require.Equal(t, "DELETE", got.methodB.Method)
	})
	t.Run("one struct embedded at one depth twice", func(t *testing.T) {
		var want struct {
			deepMethod
			deepMethod2
		}
		require.NoError(t, json.Unmarshal([]byte(body), &want))
		require.Empty(t, want.deepMethod.Method+want.deepMethod2.Method, "encoding/json drops the ambiguous member")
		var got twiceEmbedded
		require.ErrorIs(t, Unmarshal([]byte(body), &got), ErrUnknownMember)
	})
}
