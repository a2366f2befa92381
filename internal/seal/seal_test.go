package seal

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	k, err := ForCluster("", "worker-secret-0123456789", "tok", "api")
	require.NoError(t, err)
	require.Equal(t, "auth.worker_secret", k.Source())
	require.False(t, k.Builtin())
	a, b := k.Seal("pw"), k.Seal("pw")
	require.NotEqual(t, a, b, "a fresh nonce each time")
	require.True(t, strings.HasPrefix(a, "ps1."))
	got, err := k.Open(a)
	require.NoError(t, err)
	require.Equal(t, "pw", got)

	// Every hub of the cluster derives the same key from the same secret.
	k2, _ := ForCluster("", "worker-secret-0123456789", "other", "other")
	got, err = k2.Open(a)
	require.NoError(t, err)
	require.Equal(t, "pw", got)

	other, _ := ForCluster("params-key-0123456789", "worker-secret-0123456789", "", "")
	require.Equal(t, "auth.params_key", other.Source())
	_, err = other.Open(a)
	require.ErrorIs(t, err, ErrOtherKey)

	// A flipped byte does not open.
	raw := []byte(a)
	raw[len(raw)-3] ^= 1
	if raw[len(raw)-3] == '.' {
		raw[len(raw)-3] = 'A'
	}
	_, err = k.Open(string(raw))
	require.Error(t, err)
	_, err = k.Open("nonsense")
	require.Error(t, err)

	builtin, _ := ForCluster("", "", "", "")
	require.True(t, builtin.Builtin())
}

func TestSealParams(t *testing.T) {
	t.Parallel()
	k, _ := New("key-0123456789abcdef", "test")
	const pw = "s3cret-pw"
	in := json.RawMessage(`{"url":"http://x/","proxy":{"server":"http://p:1","username":"u","password":"` + pw + `"}}`)
	sealed, err := k.SealParams(in)
	require.NoError(t, err)
	require.NotContains(t, string(sealed), pw)
	require.Contains(t, string(sealed), `"password_sealed":"ps1.`)
	require.Contains(t, string(sealed), `"url":"http://x/"`)

	red := RedactParams(sealed)
	require.NotContains(t, string(red), "ps1.")
	require.Contains(t, string(red), `"password":"***"`)

	opened, err := k.OpenParams(sealed)
	require.NoError(t, err)
	var m struct {
		Proxy struct{ Password, PasswordSealed string } `json:"proxy"`
	}
	require.NoError(t, json.Unmarshal(opened, &m))
	require.Equal(t, pw, m.Proxy.Password)
	require.Empty(t, m.Proxy.PasswordSealed)

	// Params without a password keep their bytes.
	plain := json.RawMessage(`{"url": "http://x/", "proxy": {"server": "http://p:1"}}`)
	for _, f := range []func(json.RawMessage) (json.RawMessage, error){k.SealParams, k.OpenParams} {
		out, err := f(plain)
		require.NoError(t, err)
		require.Equal(t, string(plain), string(out))
	}

	// encoding/json matches field names case-insensitively: a "Proxy" (or
	// an escaped key) is sealed all the same.
	for _, in := range []string{
		`{"Proxy":{"server":"http://p:1","username":"u","PASSWORD":"` + pw + `"}}`,
		`{"\u0070roxy":{"server":"http://p:1","username":"u","password":"` + pw + `"}}`,
	} {
		out, err := k.SealParams(json.RawMessage(in))
		require.NoError(t, err)
		require.NotContains(t, string(out), pw, in)
		require.NotContains(t, string(RedactParams(json.RawMessage(in))), pw, in)
	}

	other, _ := New("another-key-0123456789", "test")
	_, err = other.OpenParams(sealed)
	require.ErrorIs(t, err, ErrOtherKey)
	require.ErrorContains(t, err, "params.proxy.password")
	require.NotContains(t, err.Error(), pw)
}

// FuzzParams: stored or forged params never panic the rewriters, and a
// redacted form never holds the clear password.
func FuzzParams(f *testing.F) {
	k, _ := New("key-0123456789abcdef", "test")
	f.Add(`{"proxy":{"server":"http://p:1","username":"u","password":"secret1"}}`)
	f.Add(`{"proxy":{"password_sealed":"ps1.x.y"}}`)
	f.Add(`{"PROXY":null,"proxy":[]}`)
	f.Add(`{"url":"http://x/","pRoXy_list":[1],"p":"prox"}`)
	f.Fuzz(func(t *testing.T, s string) {
		// The scan that skips decoding agrees with decoding: params it
		// passes through come out of the decoding path unchanged too.
		mark := func(p *messages.ProxyOptions) (bool, error) { p.Server = "changed"; return true, nil }
		fast, fastErr := rewriteProxy(json.RawMessage(s), mark)
		if tr := bytes.TrimSpace([]byte(s)); len(tr) > 0 && tr[0] == '{' {
			slow, slowErr := rewriteProxyDecoded(tr, json.RawMessage(s), mark)
			require.Equal(t, slowErr == nil, fastErr == nil, "errors differ for %q", s)
			require.Equal(t, string(slow), string(fast), "results differ for %q", s)
		}
		_, _ = k.OpenParams(json.RawMessage(s))
		_, _ = k.Open(s)
		sealed, err := k.SealParams(json.RawMessage(s))
		if err != nil {
			return
		}
		red := RedactParams(sealed)
		var m map[string]json.RawMessage
		if json.Unmarshal(red, &m) != nil {
			return
		}
		for key, raw := range m {
			if strings.EqualFold(key, "proxy") {
				var p struct{ Password string }
				if json.Unmarshal(raw, &p) == nil && p.Password != "" && p.Password != "***" {
					t.Fatalf("redacted params hold a password: %s", red)
				}
			}
		}
	})
}

// BenchmarkOpenParams is the placement of a job whose params have no
// proxy, as most do: the worker gets them as stored.
func BenchmarkOpenParams(b *testing.B) {
	k, _ := New("key-0123456789abcdef", "test")
	params := json.RawMessage(`{"url":"https://example.com/some/page?q=1","wait_for":"#main","timeout_ms":30000,"labels":{"team":"a"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.OpenParams(params); err != nil {
			b.Fatal(err)
		}
	}
}
