// Command pdf-diff is a worker with a browser job type of its own: mode
// "pdf-diff" prints two pages to PDF on the job's Chromium lane (through
// chromedp, attached to the lane's CDP endpoint) and reports how they
// differ — page counts, whether the PDFs are the same once their
// timestamps are set aside, and which text lines only one of them has.
// Both PDFs are stored as the job's assets. See README.md for running it
// against `paprika up`.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/paprika-hub/paprika/examples/internal"
	"github.com/paprika-hub/paprika/worker"
)

// Mode is the job type this worker adds.
const Mode = "pdf-diff"

// schema is the JSON Schema of the mode's params, declared in hello.
//
//go:embed schema.json
var schema json.RawMessage

// Params are the mode's params: the two pages to compare.
type Params struct {
	A string `json:"a"`
	B string `json:"b"`
}

// Page is what one side of the comparison gave.
type Page struct {
	URL    string `json:"url"`
	Pages  int    `json:"pages"`
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"` // of the PDF without its timestamps
	Asset  string `json:"asset"`
	lines  []string
}

// Result is the mode's result.
type Result struct {
	A            Page     `json:"a"`
	B            Page     `json:"b"`
	SamePages    bool     `json:"same_pages"`
	IdenticalPDF bool     `json:"identical_pdf"`
	SameText     bool     `json:"same_text"`
	OnlyInA      []string `json:"only_in_a"`
	OnlyInB      []string `json:"only_in_b"`
}

// maxListed bounds the differing lines listed per side.
const maxListed = 20

var (
	// pageObj matches a page object of a PDF (not the /Pages tree node).
	pageObj = regexp.MustCompile(`/Type\s*/Page[^s]`)
	// stamps are the PDF's creation and modification times, which differ
	// between two prints of the same page.
	stamps = regexp.MustCompile(`/(CreationDate|ModDate)\s*\([^)]*\)`)
)

// diff is the handler.
func diff(ctx context.Context, j *worker.Job) (any, error) {
	var p Params
	if err := j.Decode(&p); err != nil {
		return nil, err
	}
	lane, err := j.Lane()
	if err != nil {
		return nil, err // lane_error: the browser did not start
	}
	// Attached to the lane's browser; each page gets a tab of its own,
	// closed when its context is cancelled. The worker cleans whatever is
	// left once the handler returns.
	allocCtx, cancel := remote.NewAllocator(ctx, lane.DevToolsURL())
	defer cancel()
	a, err := printPage(allocCtx, j, p.A, "a.pdf")
	if err != nil {
		return nil, err
	}
	b, err := printPage(allocCtx, j, p.B, "b.pdf")
	if err != nil {
		return nil, err
	}
	r := Result{A: a, B: b, SamePages: a.Pages == b.Pages, IdenticalPDF: a.SHA256 == b.SHA256,
		OnlyInA: only(a.lines, b.lines), OnlyInB: only(b.lines, a.lines)}
	r.SameText = len(r.OnlyInA) == 0 && len(r.OnlyInB) == 0
	j.Logf("pages %d vs %d, identical pdf %v, same text %v", a.Pages, b.Pages, r.IdenticalPDF, r.SameText)
	return r, nil
}

// printPage loads url in a new tab, prints it and stores the PDF as asset.
func printPage(allocCtx context.Context, j *worker.Job, url, asset string) (Page, error) {
	tctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	j.Log("loading " + url)
	if err := chromedp.Do(tctx, chromedp.Navigate(url)); err != nil {
		return Page{}, fmt.Errorf("load %s: %w", url, err)
	}
	text, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return Page{}, fmt.Errorf("read the text of %s: %w", url, err)
	}
	pdf, err := chromedp.Run(tctx, chromedp.PrintToPDF(chromedp.PDFPrintBackground()))
	if err != nil {
		return Page{}, fmt.Errorf("print %s: %w", url, err)
	}
	if err := j.Upload(asset, "application/pdf", bytes.NewReader(pdf)); err != nil {
		return Page{}, fmt.Errorf("store %s: %w", asset, err)
	}
	sum := sha256.Sum256(stamps.ReplaceAll(pdf, nil))
	pg := Page{URL: url, Pages: len(pageObj.FindAll(pdf, -1)), Bytes: len(pdf), SHA256: hex.EncodeToString(sum[:]), Asset: asset}
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			pg.lines = append(pg.lines, l)
		}
	}
	j.Logf("%s: %d pages, %d bytes", url, pg.Pages, pg.Bytes)
	return pg, nil
}

// only lists the lines of a that b lacks, at most maxListed.
func only(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, l := range b {
		in[l] = true
	}
	out := []string{}
	for _, l := range a {
		if !in[l] && len(out) < maxListed {
			out = append(out, l)
		}
	}
	return out
}

func main() {
	o, err := internal.Options(Mode, os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	o.Driver = worker.DriverChromium
	o.NoBuiltins = true // this worker runs pdf-diff only
	w, err := worker.New(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pdf-diff:", err)
		os.Exit(2)
	}
	w.Handle(Mode, diff, worker.NeedsChromium(), worker.Schema(schema))
	os.Exit(internal.Run(Mode, w))
}
