package chromium_test

import (
	"context"
	"io"
	"log"
	"os/signal"
	"syscall"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/agent/chromium"
)

// Example shows how `paprika worker --driver chromium` wires the driver:
// built first, it stores assets through the agent built after it.
func Example() {
	const lanes = 2
	var a *agent.Agent
	drv, err := chromium.New(chromium.Config{
		Lanes: lanes, // the same number as the agent's
		Upload: func(ctx context.Context, jobID, name, contentType string, r io.Reader, size int64) error {
			return a.UploadAsset(ctx, jobID, name, contentType, r, size) // a is set before any job runs
		},
	})
	if err != nil {
		log.Fatal(err) // e.g. "chromium not found: install Debian package chromium or set --chromium PATH"
	}
	defer drv.Close() // after Run returned: stops every browser

	a, err = agent.New(agent.Config{HubURLs: []string{"http://127.0.0.1:8080"}, Lanes: lanes, DriverImpl: drv})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := a.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
