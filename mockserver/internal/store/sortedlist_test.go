package store

import (
	"cmp"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSortedListMatchesSortedSlice runs random inserts and removes on a
// SortedList and on a sorted slice and compares them after each step:
// length, order, positions, windows and the list's own invariants.
func TestSortedListMatchesSortedSlice(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	var (
		list SortedList[int]
		ref  []int
	)
	for step := range 1500 {
		v := rng.IntN(500)
		i, found := slices.BinarySearch(ref, v)
		if found {
			require.True(t, list.remove(v, cmp.Compare[int]), "step %d: remove %d", step, v)
			ref = slices.Delete(ref, i, i+1)
		} else {
			require.False(t, list.remove(v, cmp.Compare[int]), "step %d: remove missing %d", step, v)
			list.insert(v, cmp.Compare[int])
			ref = slices.Insert(ref, i, v)
		}
		require.NoError(t, list.check(cmp.Compare[int]), "step %d", step)
		require.Equal(t, len(ref), list.Len())
		if step%50 == 0 {
			require.Equal(t, ref, slices.Collect(list.All()))
			for i, v := range ref {
				require.Equal(t, v, list.At(i))
			}
		}
		// After a value, in the list or not, early stop included.
		after := rng.IntN(520) - 10
		start, _ := slices.BinarySearch(ref, after+1)
		k := rng.IntN(4)
		if step%50 == 0 {
			k = len(ref)
		}
		var got []int
		for v := range list.After(after, cmp.Compare[int]) {
			if len(got) == k {
				break
			}
			got = append(got, v)
		}
		require.Equal(t, append([]int{}, ref[start:min(start+k, len(ref))]...), append([]int{}, got...), "step %d: %d after %d", step, k, after)
		lo, hi := rng.IntN(len(ref)+3)-1, rng.IntN(len(ref)+3)-1
		from := min(max(lo, 0), len(ref))
		want := ref[from:max(min(hi, len(ref)), from)]
		require.Equal(t, len(want), len(list.Window(lo, hi)), "window [%d,%d)", lo, hi)
		if len(want) > 0 {
			require.Equal(t, want, list.Window(lo, hi), "window [%d,%d)", lo, hi)
		}
	}
	var empty *SortedList[int]
	require.Zero(t, empty.Len())
	require.Empty(t, empty.Window(0, 10))
	require.Empty(t, slices.Collect(empty.All()))
	require.Empty(t, slices.Collect(empty.After(0, cmp.Compare[int])))
}

// TestSortedListStaysShallow: whatever the order values arrive in (here
// sorted, reversed and alternating, the orders that make an unbalanced tree
// a list), the tree stays logarithmically deep, so that each change costs
// O(log n).
func TestSortedListStaysShallow(t *testing.T) {
	t.Parallel()
	const n = 1 << 12
	orders := map[string]func(i int) int{
		"sorted":      func(i int) int { return i },
		"reversed":    func(i int) int { return n - i },
		"alternating": func(i int) int { return (i%2*2 - 1) * i },
	}
	for name, at := range orders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var list SortedList[int]
			for i := range n {
				list.insert(at(i), cmp.Compare[int])
			}
			// A treap's height is close to 3 log2 n; 5 log2 n is
			// exceeded with negligible probability.
			limit := 5 * bits.Len(n)
			require.LessOrEqual(t, treeDepth(list.root), limit)
			require.NoError(t, list.check(cmp.Compare[int]))
		})
	}
}

// treeDepth returns the number of nodes on the longest path from t down.
func treeDepth[T comparable](t *treapNode[T]) int {
	if t == nil {
		return 0
	}
	return 1 + max(treeDepth(t.l), treeDepth(t.r))
}
