package store

import (
	"strconv"
	"testing"
)

// BenchmarkPublicNameMiss is what an error that names an unknown value
// costs the store (a-fix13c F1): every index and walk of a realm with
// 10,000 organizations and 100 clients of 10 resources each, missed.
func BenchmarkPublicNameMiss(b *testing.B) {
	s := New(nil)
	r := keyedRealm(b, "acme")
	for i := range 10000 {
		if _, err := r.CreateOrganization(OrgSpec{Name: "Org " + strconv.Itoa(i), Alias: "org-" + strconv.Itoa(i)}, t0); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 100 {
		c := Client{ClientID: "client-" + strconv.Itoa(i)}
		for j := range 10 {
			c.Resources = append(c.Resources, ClientResource{Name: "res-" + strconv.Itoa(j), Scopes: []string{"read", "write"}})
		}
		if _, err := r.AddClient(c, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Install(r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if s.PublicName("j_efXXrzpM2zQE9lDAUSq6Th6SZu9PpY") {
			b.Fatal("a secret is published")
		}
	}
}
