package main

import (
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParamValue(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"10", `10`},
		{"-2.5e3", `-2.5e3`},
		{"true", `true`},
		{"false", `false`},
		{"null", `null`},
		{`[1, 2, "three"]`, `[1,2,"three"]`},
		{`{"op": "click", "selector": "#go"}`, `{"op":"click","selector":"#go"}`},
		{`"10"`, `"10"`}, // quoted: the string "10"
		{" 7 ", `7`},
		{"hello", `"hello"`},
		{"https://example.com/?q=1", `"https://example.com/?q=1"`},
		{"10abc", `"10abc"`},
		{"True", `"True"`}, // JSON is case-sensitive
		{"", `""`},
		{"  ", `"  "`},
		{"[1, 2", `"[1, 2"`},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, string(paramValue(tc.in)), "input %q", tc.in)
	}
}

func TestParamFlag(t *testing.T) {
	t.Parallel()
	p := newParamFlag()
	p.readFile = func(name string) ([]byte, error) {
		switch name {
		case "steps.json":
			return []byte("[{\"op\": \"navigate\"}]\n"), nil
		case "note.txt":
			return []byte("plain text\n"), nil
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	require.NoError(t, p.Set("lines=3"))
	require.NoError(t, p.Set("steps=@steps.json"))
	require.NoError(t, p.Set("note=@note.txt"))
	require.NoError(t, p.Set("handle=@@me"))
	require.NoError(t, p.Set("expr=a=b")) // only the first "=" splits
	require.NoError(t, p.Set("lines=4"))  // the last value wins
	got, err := json.Marshal(p.params())
	require.NoError(t, err)
	require.JSONEq(t, `{"lines":4,"steps":[{"op":"navigate"}],"note":"plain text","handle":"@me","expr":"a=b"}`, string(got))

	require.EqualError(t, p.Set("novalue"), "want KEY=VALUE")
	require.EqualError(t, p.Set("=x"), "want KEY=VALUE")
	err = p.Set("x=@missing.json")
	require.EqualError(t, err, "read missing.json: file does not exist")
	require.True(t, errors.Is(err, fs.ErrNotExist))

	require.Nil(t, newParamFlag().params(), "no --param: no params sent")
}

func TestLabelAndListFlags(t *testing.T) {
	t.Parallel()
	l := labelFlag{}
	require.NoError(t, l.Set("team=qa"))
	require.NoError(t, l.Set("url=http://x/?a=b"))
	require.Equal(t, labelFlag{"team": "qa", "url": "http://x/?a=b"}, l)
	require.Equal(t, "team=qa,url=http://x/?a=b", l.String())
	require.Error(t, l.Set("team"))

	var hubs listFlag
	require.NoError(t, hubs.Set("http://a:8080, http://b:8080"))
	require.NoError(t, hubs.Set("http://c:8080"))
	require.Equal(t, listFlag{"http://a:8080", "http://b:8080", "http://c:8080"}, hubs)
}

func TestParseArgsInterleaved(t *testing.T) {
	t.Parallel()
	fset := newFlagSet("test")
	follow := fset.Bool("f", false, "")
	hub := fset.String("hub", "", "")
	pos, err := parseArgs(fset, []string{"j1", "-f", "--hub", "http://h", "j2", "--", "-not-a-flag"})
	require.NoError(t, err)
	require.Equal(t, []string{"j1", "j2", "-not-a-flag"}, pos)
	require.True(t, *follow)
	require.Equal(t, "http://h", *hub)

	_, err = parseArgs(newFlagSet("test"), []string{"x", "-h"})
	require.ErrorIs(t, err, flag.ErrHelp)
}

func TestNewClientDefaults(t *testing.T) {
	t.Parallel()
	c := &cli{getenv: func(string) string { return "" }}
	cl, err := c.newClient(&clientFlags{})
	require.NoError(t, err)
	require.Equal(t, []string{"http://127.0.0.1:8080"}, cl.BaseURLs())

	c.getenv = func(k string) string {
		return map[string]string{envHub: "hub1:8080,hub2:8080"}[k]
	}
	cl, err = c.newClient(&clientFlags{})
	require.NoError(t, err)
	require.Equal(t, []string{"http://hub1:8080", "http://hub2:8080"}, cl.BaseURLs())

	cl, err = c.newClient(&clientFlags{hubs: listFlag{"https://flag:443"}})
	require.NoError(t, err)
	require.Equal(t, []string{"https://flag:443"}, cl.BaseURLs(), "--hub wins over $PAPRIKA_HUB")
}
