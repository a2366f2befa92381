package link

import "testing"

// TestSameHub: a worker's --hub URL and a hub's advertised address name
// one listener whatever the scheme's spelling (ws for http), the host's
// case, a default port written out or a trailing slash; another port,
// host, path, or plain against TLS do not.
func TestSameHub(t *testing.T) {
	for _, tc := range []struct {
		worker, address string
		same            bool
	}{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"ws://127.0.0.1:8080/", "http://127.0.0.1:8080", true},
		{"HTTP://Hub-A.internal", "http://hub-a.internal:80", true},
		{"wss://hub-a.internal", "https://hub-a.internal:443/", true},
		{"http://hub-a.internal/paprika/", "http://hub-a.internal/paprika", true},
		{"127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8081", false},
		{"http://127.0.0.1:8080", "http://127.0.0.2:8080", false},
		{"http://hub-a.internal", "https://hub-a.internal:80", false},
		{"https://hub-a.internal", "http://hub-a.internal:443", false},
		{"http://hub-a.internal/a", "http://hub-a.internal/b", false},
		{"ftp://hub-a.internal", "ftp://hub-a.internal", false},
		{"http://", "http://", false},
		{"http://[::1", "http://[::1", false},
	} {
		if got := sameHub(tc.worker, tc.address); got != tc.same {
			t.Errorf("sameHub(%q, %q) = %v, want %v", tc.worker, tc.address, got, tc.same)
		}
	}
}
