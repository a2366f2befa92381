package main

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// median of xs (the mean of the middle two for an even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// pairedRatios is a[i]/b[i] for the rounds both variants ran: round i of
// each ran back to back, so their ratio cancels the load the machine had
// then.
func pairedRatios(a, b []float64) []float64 {
	out := make([]float64, 0, min(len(a), len(b)))
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

// cleanRedis deletes every key of a round's prefix.
func cleanRedis(url, prefix string) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, prefix+"*", 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if len(keys) > 0 {
		rdb.Del(ctx, keys...)
	}
}
