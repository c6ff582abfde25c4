package fake

func newClient(opts ...pep.Option) (*pep.Client, error) {
	return pep.New("u", "r", "c", append([]pep.Option{pep.WithTimeout(time.Minute)}, opts...)...)
}

func Start() { c, _ := pep.New("u", "r", "c") }
