package fake_test

func Example() { c, _ := pep.New("u", "r", "c") }
