package memory_test

import (
	"testing"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/memory"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

func TestWorkerRegistry(t *testing.T) {
	t.Parallel()
	storetest.RunWorkerRegistry(t, func(t *testing.T) persistence.WorkerRegistry {
		return memory.NewWorkerRegistry()
	})
}

func TestHubRegistry(t *testing.T) {
	t.Parallel()
	storetest.RunHubRegistry(t, func(t *testing.T) persistence.HubRegistry {
		return memory.NewHubRegistry()
	})
}

func TestSessionStore(t *testing.T) {
	t.Parallel()
	storetest.RunSessionStore(t, func(t *testing.T) persistence.SessionStore {
		return memory.NewSessionStore()
	})
}
