package fake_test

func newTestClient(opts ...pep.Option) (*pep.Client, error) {
	return pep.New("u", "r", "c", append([]pep.Option{pep.WithTimeout(time.Minute)}, opts...)...)
}

func TestThroughTheHelper(t *testing.T) { c, _ := newTestClient() }

func TestDirect(t *testing.T) {
	c, _ := pep.New("u", "r", "c", pep.WithTimeout(time.Minute))
}

func TestAsAValue(t *testing.T) { newClient := pep.New; _ = newClient }

func TestOtherPackages(t *testing.T) { _, _ = authzen.New("u"); _ = other.New() }
