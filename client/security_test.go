package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSecurityClientTrustsAPrivateCA: with the CA of the hub's certificate
// (WithRootCAs or WithTLSConfig) the client lists jobs over https; without
// it the handshake fails, at once; a client passed with WithHTTPClient is not
// changed, and a transport the client cannot clone is an error from New.
func TestSecurityClientTrustsAPrivateCA(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobs":[{"id":"j1","status":"queued"}]}`))
	}))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())

	own := &http.Client{Transport: &http.Transport{}}
	for name, opts := range map[string][]Option{
		"roots":            {WithRootCAs(pool)},
		"tls config":       {WithTLSConfig(&tls.Config{RootCAs: pool})},
		"with http client": {WithHTTPClient(own), WithRootCAs(pool)},
		"option order":     {WithRootCAs(pool), WithHTTPClient(own)},
	} {
		c, err := New([]string{srv.URL}, opts...)
		require.NoError(t, err, name)
		page, err := c.List(t.Context(), ListOptions{})
		require.NoError(t, err, name)
		require.Len(t, page.Jobs, 1, name)
		c.CloseIdleConnections()
	}
	// (Transport.Clone itself may fill in the original's HTTP/2 defaults.)
	if tc := own.Transport.(*http.Transport).TLSClientConfig; tc != nil {
		require.Nil(t, tc.RootCAs, "the caller's transport is cloned, not given the CA")
	}

	// A certificate that does not verify is not retried: an hour's backoff
	// would outlast the context.
	c, err := New([]string{srv.URL}, WithBackoff(time.Hour, time.Hour))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = c.List(ctx, ListOptions{})
	var unknown x509.UnknownAuthorityError
	require.True(t, errors.As(err, &unknown), "%v", err)
	require.NoError(t, ctx.Err(), "not retried")

	_, err = New([]string{srv.URL}, WithHTTPClient(&http.Client{Transport: roundTrip(nil)}), WithRootCAs(pool))
	require.ErrorContains(t, err, "WithTLSConfig needs the HTTP client's Transport to be an *http.Transport")
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
