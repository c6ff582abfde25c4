package deps_test

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// directRequirements returns the modules the go.mod at path requires
// directly (its require lines without "// indirect").
func directRequirements(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var mods []string
	inBlock := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "require (":
			inBlock = true
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inBlock:
			continue
		}
		if line == "" || strings.HasPrefix(line, "//") || strings.HasSuffix(line, "// indirect") {
			continue
		}
		mods = append(mods, strings.Fields(line)[0])
	}
	require.NoError(t, sc.Err())
	return mods
}

// tableModules returns the modules named (in backquotes) in the first
// column of the README's "What it stands on" table.
func tableModules(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## What it stands on\n")
	require.True(t, ok, "the README has a section \"What it stands on\"")
	section, _, _ = strings.Cut(section, "\n## ")
	quoted := regexp.MustCompile("`([^`]+)`")
	var mods []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range quoted.FindAllStringSubmatch(first, -1) {
			mods = append(mods, m[1])
		}
	}
	return mods
}

// TestRequirementsAreTheREADMEs: the library module requires directly
// exactly the modules the README's table names, each with the reason it is
// there.
func TestRequirementsAreTheREADMEs(t *testing.T) {
	required := directRequirements(t, "../../go.mod")
	named := tableModules(t, "../../README.md")
	require.NotEmpty(t, required)
	slices.Sort(required)
	slices.Sort(named)
	for _, m := range required {
		require.Contains(t, named, m, "go.mod requires %s, which the README's \"What it stands on\" does not name: "+
			"a test-only library goes in integration/; a library the packages need goes in the table with its reason", m)
	}
	require.Equal(t, named, required, "the README's \"What it stands on\" names a module go.mod does not require")
}
