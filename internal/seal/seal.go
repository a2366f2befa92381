// Package seal keeps the one secret a job's params may carry — the proxy
// password of the browser options — out of the job store and the API in
// clear text. The hub seals it with AES-256-GCM when it accepts a job
// (params.proxy.password becomes params.proxy.password_sealed), answers it
// as "***", and opens it only into the assign_job frame for the worker.
//
// The key comes from auth.params_key, or, when that is unset, from the
// secret every hub of a cluster shares anyway (auth.worker_secret, else
// auth.worker_token, else auth.api_token), so any hub opens what another
// sealed. With none of them set the key is built in: the store then holds
// no clear password, but anyone with this source can open it. What the
// seal protects: a dump or backup of the job store, its replicas and the
// API's job objects (GET /jobs, the admin UI, the CLI). What it does not:
// a hub's memory, the worker link (TLS protects that), the worker itself,
// which must hand the password to Chromium, and anyone who holds the key.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/paprika-hub/paprika/messages"
)

// prefix versions the sealed format: "ps1.<key id>.<base64url(nonce|ciphertext)>".
const prefix = "ps1."

// info separates this key from any other use of the same secret.
const info = "paprika params seal v1"

// builtinSecret is the key material when no secret is configured: the
// store holds no clear password, but the source opens it.
const builtinSecret = "paprika built-in params key: set auth.params_key"

// MinKeyBytes is the shortest auth.params_key a hub accepts.
const MinKeyBytes = 16

// additional binds a sealed value to its field, so a ciphertext cannot be
// moved into another field meaning something else.
var additional = []byte("params.proxy.password")

// ErrOtherKey is returned for a value sealed under another key (the
// cluster's secret changed since the job was submitted).
var ErrOtherKey = errors.New("sealed under another key")

// Key seals and opens params secrets. Safe for concurrent use.
type Key struct {
	aead    cipher.AEAD
	id      string // first bytes of the key's hash: names the key in sealed values
	source  string // the config key the key came from, or "built-in"
	builtin bool
}

// New derives a key from secret (HKDF-SHA256); source names where secret
// came from, for logs.
func New(secret, source string) (*Key, error) {
	raw, err := hkdf.Key(sha256.New, []byte(secret), nil, info, 32)
	if err != nil {
		return nil, fmt.Errorf("derive params key: %w", err)
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("params key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("params key: %w", err)
	}
	sum := sha256.Sum256(append([]byte("key id "), raw...))
	return &Key{aead: aead, id: base64.RawURLEncoding.EncodeToString(sum[:6]), source: source}, nil
}

// ForCluster picks the key every hub of one cluster derives alike: the
// first of paramsKey (auth.params_key), workerSecret, workerToken and
// apiToken that is set, else the built-in key (Builtin reports it).
func ForCluster(paramsKey, workerSecret, workerToken, apiToken string) (*Key, error) {
	for _, c := range []struct{ v, source string }{
		{paramsKey, "auth.params_key"}, {workerSecret, "auth.worker_secret"},
		{workerToken, "auth.worker_token"}, {apiToken, "auth.api_token"},
	} {
		if c.v != "" {
			return New(c.v, c.source)
		}
	}
	k, err := New(builtinSecret, "built-in")
	if k != nil {
		k.builtin = true
	}
	return k, err
}

// Source is the config key the key was derived from, or "built-in".
func (k *Key) Source() string { return k.source }

// Builtin reports whether no secret was configured.
func (k *Key) Builtin() bool { return k.builtin }

// Seal encrypts plain under a fresh random nonce.
func (k *Key) Seal(plain string) string {
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	out := k.aead.Seal(nonce, nonce, []byte(plain), additional)
	return prefix + k.id + "." + base64.RawURLEncoding.EncodeToString(out)
}

// Open decrypts a value of Seal. The error never contains the value.
func (k *Key) Open(sealed string) (string, error) {
	rest, ok := strings.CutPrefix(sealed, prefix)
	id, body, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return "", errors.New("not a sealed value")
	}
	if id != k.id {
		return "", fmt.Errorf("%w (key %s, this hub's is %s from %s)", ErrOtherKey, id, k.id, k.source)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < k.aead.NonceSize() {
		return "", errors.New("sealed value is damaged")
	}
	n := k.aead.NonceSize()
	plain, err := k.aead.Open(nil, raw[:n], raw[n:], additional)
	if err != nil {
		return "", errors.New("sealed value does not open: damaged or forged")
	}
	return string(plain), nil
}

// SealParams returns params with proxy.password sealed into
// proxy.password_sealed; params without one come back unchanged.
func (k *Key) SealParams(params json.RawMessage) (json.RawMessage, error) {
	return rewriteProxy(params, func(p *messages.ProxyOptions) (bool, error) {
		if p.Password == "" {
			return false, nil
		}
		p.PasswordSealed, p.Password = k.Seal(p.Password), ""
		return true, nil
	})
}

// OpenParams returns params with proxy.password_sealed opened back into
// proxy.password: the params the worker gets.
func (k *Key) OpenParams(params json.RawMessage) (json.RawMessage, error) {
	return rewriteProxy(params, func(p *messages.ProxyOptions) (bool, error) {
		if p.PasswordSealed == "" {
			return false, nil
		}
		plain, err := k.Open(p.PasswordSealed)
		if err != nil {
			return false, fmt.Errorf("params.proxy.password: %w", err)
		}
		p.Password, p.PasswordSealed = plain, ""
		return true, nil
	})
}

// RedactParams returns params with the proxy password, clear or sealed,
// shown as "***": the form of every API answer.
func RedactParams(params json.RawMessage) json.RawMessage {
	out, err := rewriteProxy(params, func(p *messages.ProxyOptions) (bool, error) {
		if p.Password == "" && p.PasswordSealed == "" {
			return false, nil
		}
		p.Password, p.PasswordSealed = messages.RedactedPassword, ""
		return true, nil
	})
	if err != nil {
		// Params the hub stored always decode; anything else is shown
		// without its proxy rather than risk showing a password.
		return json.RawMessage(`{}`)
	}
	return out
}

// rewriteProxy applies f to params.proxy and re-encodes params when f
// changed it. Other fields keep their bytes (not their order). Every key
// that encoding/json would take for "proxy" counts (it matches field
// names case-insensitively): a "Proxy" must not slip past in clear.
func rewriteProxy(params json.RawMessage, f func(*messages.ProxyOptions) (bool, error)) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(params)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return params, nil
	}
	if !mayNameProxy(trimmed) && json.Valid(trimmed) {
		// Every job's params pass here on placement and in each API
		// answer, and most have no proxy: a scan instead of decoding the
		// object into a map. Invalid params still fail as before.
		return params, nil
	}
	return rewriteProxyDecoded(trimmed, params, f)
}

// mayNameProxy reports whether b could hold a key that encoding/json
// takes for "proxy": it holds "proxy" in any ASCII case, or an escape or
// a non-ASCII byte (an escaped or Unicode-folded spelling), which this
// scan does not try to read.
func mayNameProxy(b []byte) bool {
	const word = "proxy"
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '\\' || c >= 0x80 {
			return true
		}
		if c|0x20 == 'p' && i+len(word) <= len(b) {
			j := 1
			for ; j < len(word) && b[i+j]|0x20 == word[j]; j++ {
			}
			if j == len(word) {
				return true
			}
		}
	}
	return false
}

// rewriteProxyDecoded is rewriteProxy on the decoded object (trimmed is
// params without surrounding space).
func rewriteProxyDecoded(trimmed, params json.RawMessage, f func(*messages.ProxyOptions) (bool, error)) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	changed := false
	for key, raw := range m {
		if !strings.EqualFold(key, "proxy") || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		var p messages.ProxyOptions
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("params.proxy: %w", err)
		}
		c, err := f(&p)
		if err != nil {
			return nil, err
		}
		if !c {
			continue
		}
		if m[key], err = json.Marshal(p); err != nil {
			return nil, fmt.Errorf("params.proxy: %w", err)
		}
		changed = true
	}
	if !changed {
		return params, nil
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	return out, nil
}
