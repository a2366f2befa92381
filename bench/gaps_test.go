package main

import (
	"slices"
	"testing"
	"time"

	"github.com/paprika-hub/paprika/client"
)

// TestGapsOf: one worker with two lanes and a queue of jobs submitted
// before any ran, but one. Lane 0 is refilled 1 ms after each freeing;
// lane 1, freed at 12 ms, is passed over while the worker's starts go to
// lane 0 and refilled only at 40 ms: a 28 ms gap per lane. Per slot the
// starts at 11, 21 and 40 ms refill the slots freed at 10, 12 and 30 ms
// (1, 9 and 10 ms); the start at 32 ms refills the one freed at 20 ms
// with a job submitted after it, which is not counted, nor per lane.
func TestGapsOf(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	job := func(lane string, created, started, finished int) client.Job {
		return client.Job{WorkerID: "w", Lane: lane, CreatedAt: at(created), StartedAt: at(started), FinishedAt: at(finished)}
	}
	jobs := []client.Job{
		job("l0", 0, 1, 10),
		job("l1", 0, 2, 12),
		job("l0", 0, 11, 20),
		job("l0", 0, 21, 30),
		job("l0", 31, 32, 33),
		job("l1", 0, 40, 50),
		// Another worker's jobs are paired among themselves.
		{WorkerID: "v", Lane: "l0", CreatedAt: at(0), StartedAt: at(3), FinishedAt: at(4)},
		{WorkerID: "v", Lane: "l0", CreatedAt: at(0), StartedAt: at(9), FinishedAt: at(13)},
	}
	lane, slot := gapsOf(jobs)
	ms := func(ds []time.Duration) []int {
		out := make([]int, len(ds))
		for i, d := range ds {
			out[i] = int(d / time.Millisecond)
		}
		slices.Sort(out)
		return out
	}
	if got, want := ms(lane), []int{1, 1, 5, 28}; !slices.Equal(got, want) {
		t.Errorf("lane gaps %v, want %v", got, want)
	}
	if got, want := ms(slot), []int{1, 5, 9, 10}; !slices.Equal(got, want) {
		t.Errorf("slot gaps %v, want %v", got, want)
	}
}

// TestGapsOfLaneInRunOrder: on lane l0, job b was claimed (started_at 5)
// before job a (6) but reached the worker after it, so the lane ran a
// (finished 10), then b (finished 20), then c (claimed 22). The lane's
// pairs are a→b (b claimed before a finished: not a wait for the lane)
// and b→c, 2 ms — ordered by claim instead, c's gap would span b's run
// and read 12 ms.
func TestGapsOfLaneInRunOrder(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	job := func(started, finished int) client.Job {
		return client.Job{WorkerID: "w", Lane: "l0", CreatedAt: at(0), StartedAt: at(started), FinishedAt: at(finished)}
	}
	lane, _ := gapsOf([]client.Job{job(6, 10), job(5, 20), job(22, 30)})
	if len(lane) != 1 || lane[0] != 2*time.Millisecond {
		t.Errorf("lane gaps %v, want [2ms]", lane)
	}
}
