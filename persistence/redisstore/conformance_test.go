package redisstore

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

func TestLogStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.RunLogStore(t, func(t *testing.T) persistence.LogStore {
		tb := setup(t)
		return NewLogStore(tb.client, WithPrefix(tb.prefix))
	})
}

func TestWorkerRegistryConformance(t *testing.T) {
	t.Parallel()
	storetest.RunWorkerRegistry(t, func(t *testing.T) persistence.WorkerRegistry {
		tb := setup(t)
		return NewWorkerRegistry(tb.client, WithPrefix(tb.prefix))
	})
}

func TestHubRegistryConformance(t *testing.T) {
	t.Parallel()
	storetest.RunHubRegistry(t, func(t *testing.T) persistence.HubRegistry {
		tb := setup(t)
		return NewHubRegistry(tb.client, WithPrefix(tb.prefix))
	})
}

func TestSessionStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.RunSessionStore(t, func(t *testing.T) persistence.SessionStore {
		tb := setup(t)
		return NewSessionStore(tb.client, WithPrefix(tb.prefix))
	})
}

func TestApprovalStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.RunApprovalStore(t, func(t *testing.T) (persistence.ApprovalStore, func() persistence.ApprovalStore) {
		tb := setup(t)
		reopen := func() persistence.ApprovalStore {
			// A restarted hub: a client of its own on the same keys.
			again := redis.NewClient(tb.client.Options())
			t.Cleanup(func() { _ = again.Close() })
			return NewApprovalStore(again, WithPrefix(tb.prefix))
		}
		return NewApprovalStore(tb.client, WithPrefix(tb.prefix)), reopen
	})
}
