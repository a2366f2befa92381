package redisstore

import (
	"testing"

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
