package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chromiumTimeout bounds both runs of the browser together: it starts in
// a few seconds, but the machine is shared.
const chromiumTimeout = 2 * time.Minute

// TestHTMLRendersInHeadlessChromium opens the report the way a user
// would, in a real browser (Debian's chromium, headless): the rendered
// DOM must hold the SVG timeline and one shaded rect per fault, and a
// screenshot of the page must be a real picture, not a blank one.
func TestHTMLRendersInHeadlessChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed, so the HTML report cannot be rendered; install it with `apt-get install -y chromium` (Debian), as .ci/run does")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := HTML(f, sampleHistory(), sampleSummary(t, invalidFindings())); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), chromiumTimeout)
	defer cancel()
	url := "file://" + page

	dom := runChromium(ctx, t, bin, "--dump-dom", url)
	if !strings.Contains(dom, "<svg") || !strings.Contains(dom, "</svg>") {
		t.Fatalf("rendered DOM has no SVG:\n%s", dom)
	}
	rects := regexp.MustCompile(`<rect class="fault fault-([a-z0-9-]+)"`).FindAllStringSubmatch(dom, -1)
	var kinds []string
	for _, r := range rects {
		kinds = append(kinds, r[1])
	}
	if got := strings.Join(kinds, ","); got != "kill,pause,partition" {
		t.Errorf("rendered DOM has fault rects %q, want kill,pause,partition", got)
	}
	if n := strings.Count(dom, `<rect class="unavail`); n != 3 {
		t.Errorf("rendered DOM has %d unavailability marks, want 3", n)
	}

	shot := filepath.Join(dir, "report.png")
	runChromium(ctx, t, bin, "--window-size=1200,1400", "--screenshot="+shot, url)
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if len(b) < 20<<10 {
		t.Errorf("screenshot is %d bytes, want a real page (at least 20 KiB)", len(b))
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if got := img.Bounds().Size(); got != image.Pt(1200, 1400) {
		t.Errorf("screenshot is %v, want 1200x1400", got)
	}
	if n := colours(img, 50); n < 50 {
		t.Errorf("screenshot has %d colours, want a drawn page (at least 50)", n)
	}
	t.Logf("screenshot %d bytes, DOM %d bytes", len(b), len(dom))
}

// runChromium runs one headless chromium with its own profile directory
// and returns its stdout. The browser and the helpers it forks run in
// their own process group, which is killed when ctx ends and after the
// browser exits, so none outlives the test.
func runChromium(ctx context.Context, t *testing.T, bin string, args ...string) string {
	t.Helper()
	profile := t.TempDir()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile}, args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+profile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left in the group, if any
	}
	if err != nil {
		t.Fatalf("chromium %s: %v (timeout %v)\nstderr:\n%s", strings.Join(args, " "), err, chromiumTimeout, stderr.String())
	}
	return stdout.String()
}

// colours counts the distinct colours of img, stopping at limit.
func colours(img image.Image, limit int) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}
