package messages

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBrowserOptionsValidate(t *testing.T) {
	t.Parallel()
	good := `{"proxy":{"server":"http://proxy.example:3128","username":"u","password":"p"},
		"user_agent":"Bot/1","viewport":{"width":1024,"height":768},"locale":"en-US","timezone":"Europe/Berlin",
		"cookies":[{"name":"a","value":"b","domain":".example.org","path":"/","secure":true,"same_site":"None","expires":1900000000},
		           {"name":"c","value":"","url":"https://example.org/"}],
		"block":{"resource_types":["Image","Font"],"url_patterns":["*.png","*/ads/*"]}}`
	var o BrowserOptions
	require.NoError(t, json.Unmarshal([]byte(good), &o))
	require.NoError(t, o.Validate())
	require.False(t, o.Empty())
	require.True(t, BrowserOptions{}.Empty())
	require.NoError(t, BrowserOptions{Proxy: &ProxyOptions{Server: "socks5://10.0.0.1:1080"}}.Validate())
	require.NoError(t, BrowserOptions{Proxy: &ProxyOptions{Server: "http://[::1]:8080"}}.Validate())

	long := strings.Repeat("x", 600)
	for _, c := range []struct {
		json, field, msg string
	}{
		{`{"proxy":{}}`, "proxy.server", "required"},
		{`{"proxy":{"server":"ftp://h:21"}}`, "proxy.server", "scheme"},
		{`{"proxy":{"server":"http://h"}}`, "proxy.server", "host:port"},
		{`{"proxy":{"server":"http://h:99999"}}`, "proxy.server", "out of range"},
		{`{"proxy":{"server":"http://u:pw@h:1"}}`, "proxy.server", "credentials go in"},
		{`{"proxy":{"server":"http://h:1/path"}}`, "proxy.server", "no path"},
		{`{"proxy":{"server":"http://h:1","password":"p"}}`, "proxy.username", "required with proxy.password"},
		{`{"proxy":{"server":"socks5://h:1","username":"u","password":"p"}}`, "proxy.username", "SOCKS"},
		{`{"proxy":{"server":"http://h:1","username":"u","password_sealed":"ps1.x.y"}}`, "proxy.password_sealed", "hub's own"},
		{`{"proxy":{"server":"http://h:1","username":"u","password":"` + long + `"}}`, "proxy.password", "at most 256"},
		{`{"proxy":{"server":"http://h:1","username":"u\n","password":"p"}}`, "proxy.username", "control"},
		{`{"user_agent":"` + long + `"}`, "user_agent", "at most 512"},
		{`{"user_agent":"a\u0001b"}`, "user_agent", "printable"},
		{`{"viewport":{"width":0,"height":500}}`, "viewport.width", "0 is out of range 100..8192"},
		{`{"viewport":{"width":500,"height":9000}}`, "viewport.height", "9000 is out of range 100..8192"},
		{`{"locale":"not a locale"}`, "locale", "BCP 47"},
		{`{"locale":"e"}`, "locale", "BCP 47"},
		{`{"timezone":"Mars/Olympus"}`, "timezone", "IANA"},
		{`{"timezone":"Local"}`, "timezone", "IANA"},
		{`{"timezone":"../../etc/passwd"}`, "timezone", "IANA"},
		{`{"cookies":[{"value":"v","domain":"a.b"}]}`, "cookies[0].name", "required"},
		{`{"cookies":[{"name":"a","value":"v"}]}`, "cookies[0].domain", "domain or a url"},
		{`{"cookies":[{"name":"a","value":"v","url":"ftp://x/"}]}`, "cookies[0].url", "http(s)"},
		{`{"cookies":[{"name":"a=b","value":"v","domain":"a.b"}]}`, "cookies[0].name", "not a cookie name"},
		{`{"cookies":[{"name":"a","value":"v;w","domain":"a.b"}]}`, "cookies[0].value", "';'"},
		{`{"cookies":[{"name":"a","value":"v","domain":"a.b","path":"x"}]}`, "cookies[0].path", "start with /"},
		{`{"cookies":[{"name":"a","value":"v","domain":"a.b","same_site":"Sometimes"}]}`, "cookies[0].same_site", "not one of"},
		{`{"cookies":[{"name":"a","value":"v","domain":"a.b","same_site":"None"}]}`, "cookies[0].same_site", "secure"},
		{`{"cookies":[{"name":"a","value":"v","domain":"a.b","expires":-1}]}`, "cookies[0].expires", "Unix time"},
		{`{"cookies":[{"name":"a","value":"v","domain":"a b"}]}`, "cookies[0].domain", "host name"},
		{`{"block":{"resource_types":["Images"]}}`, "block.resource_types[0]", "not one of"},
		{`{"block":{"url_patterns":[""]}}`, "block.url_patterns[0]", "empty"},
		{`{"block":{"url_patterns":["` + strings.Repeat("y", 1100) + `"]}}`, "block.url_patterns[0]", "at most 1024"},
	} {
		var o BrowserOptions
		require.NoError(t, json.Unmarshal([]byte(c.json), &o), c.json)
		err := o.Validate()
		var oe *OptionError
		require.True(t, errors.As(err, &oe), "%s: %v", c.json, err)
		require.Equal(t, c.field, oe.Field, c.json)
		require.Contains(t, oe.Msg, c.msg, c.json)
		require.True(t, strings.HasPrefix(err.Error(), c.field+": "))
	}

	many := BrowserOptions{Cookies: make([]Cookie, MaxCookies+1)}
	require.ErrorContains(t, many.Validate(), "cookies: 101 cookies, at most 100")
	pats := BrowserOptions{Block: &BlockOptions{URLPatterns: make([]string, MaxBlockPatterns+1)}}
	require.ErrorContains(t, pats.Validate(), "block.url_patterns: 101 patterns, at most 100")
}

// TestBrowserOptionsNeverEchoPassword: no error, whatever the fault, shows
// the proxy's password, nor credentials written into its URL.
func TestBrowserOptionsNeverEchoPassword(t *testing.T) {
	t.Parallel()
	const secret = "Zq9-secret-Zq9"
	for _, p := range []ProxyOptions{
		{Server: "http://u:" + secret + "@host"},
		{Server: "http://u:" + secret + "@host:1"},
		{Server: "gopher://u:" + secret + "@host:1/x"},
		{Server: "http://host:1", Password: secret},
		{Server: "http://host:1", Username: "u", Password: secret + "\n"},
		{Server: "socks5://host:1", Username: "u", Password: secret},
	} {
		err := BrowserOptions{Proxy: &p}.Validate()
		require.Error(t, err)
		require.NotContains(t, err.Error(), secret)
	}
	r := BrowserOptions{Proxy: &ProxyOptions{Server: "http://h:1", Username: "u", Password: secret}}.Redacted()
	b, _ := json.Marshal(r)
	require.NotContains(t, string(b), secret)
	require.Contains(t, string(b), `"password":"***"`)
}

// FuzzBrowserOptions: any JSON decodes and validates without a panic, and
// an error never carries the proxy password.
func FuzzBrowserOptions(f *testing.F) {
	f.Add(`{"proxy":{"server":"http://h:1","username":"u","password":"pw"},"viewport":{"width":1,"height":2}}`)
	f.Add(`{"cookies":[{"name":"a","value":"b","url":"http://x/"}],"block":{"resource_types":["Image"],"url_patterns":["*"]}}`)
	f.Add(`{"locale":"en-US","timezone":"Europe/Berlin","user_agent":"x"}`)
	f.Fuzz(func(t *testing.T, s string) {
		var o BrowserOptions
		if json.Unmarshal([]byte(s), &o) != nil {
			return
		}
		err := o.Validate()
		if err != nil && o.Proxy != nil && len(o.Proxy.Password) >= 4 && strings.Contains(err.Error(), o.Proxy.Password) {
			t.Fatalf("error shows the password: %v", err)
		}
		_ = o.Redacted()
	})
}
