package api

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// rateLimiter holds one token bucket per client address (limits.api_rate).
// Buckets unused for rateIdle are dropped, so the map holds the clients of
// the last minutes, not every address ever seen.
type rateLimiter struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	lim  *rate.Limiter
	used time.Time
}

// rateIdle is how long an unused bucket is kept; a full bucket refills in
// burst/rate seconds, far less, so dropping it forgives nothing.
const rateIdle = 5 * time.Minute

func newRateLimiter(perSecond, burst int) *rateLimiter {
	return &rateLimiter{limit: rate.Limit(perSecond), burst: max(burst, 1), buckets: map[string]*bucket{}, swept: time.Now()}
}

// allow takes a token of key's bucket; when there is none it returns how
// long until there will be.
func (l *rateLimiter) allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > rateIdle {
		for k, b := range l.buckets {
			if now.Sub(b.used) > rateIdle {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b := l.buckets[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = b
	}
	b.used = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // a refused request takes no token
		return false, d
	}
	return true, 0
}

// limitRate answers 429 rate_limited, with Retry-After in whole seconds,
// to a client address over limits.api_rate.
func (s *Server) limitRate(next http.Handler) http.Handler {
	if s.rates == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, wait := s.rates.allow(clientIP(r), time.Now())
		if !ok {
			secs := max(1, int(math.Ceil(wait.Seconds())))
			e := limitError(http.StatusTooManyRequests, "rate_limited", "limits.api_rate", s.limits.APIRate,
				"too many requests from this address; retry after %ds", secs)
			e.Extra["burst"] = s.limits.APIBurst
			e.RetryAfter = strconv.Itoa(secs)
			writeError(w, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// clientIP is the request's remote address without its port. Forwarded
// headers are not trusted: any client could set them to get a fresh bucket.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
