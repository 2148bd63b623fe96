package proc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A child in its own group prints its ready line, and the group is
// stopped whole: its own child too.
func TestChildReadyAndGroupStop(t *testing.T) {
	cmd := exec.Command("sh", "-c", `sleep 30 & echo "sleep $! serving on http://127.0.0.1:1234"; wait`)
	Child(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := ReadyLine(out, "sleep ", 10*time.Second)
	var sleeper int
	if _, serr := fmt.Sscanf(line, "sleep %d serving on http://127.0.0.1:1234", &sleeper); err != nil || serr != nil {
		t.Fatalf("ready line %q, %v, %v", line, err, serr)
	}
	if pgid, err := syscall.Getpgid(cmd.Process.Pid); err != nil || pgid != cmd.Process.Pid {
		t.Fatalf("the child's group is %d (%v), want its own %d", pgid, err, cmd.Process.Pid)
	}
	if err := Signal(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the group outlived its signal")
	}
	// The orphaned sleep is dead: gone, or a zombie its new parent has
	// yet to reap (not every container's init reaps).
	for i := 0; ; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sleeper))
		if err != nil {
			break
		}
		if _, after, ok := strings.Cut(string(b), ") "); ok && strings.HasPrefix(after, "Z") {
			break
		}
		if i == 100 {
			t.Fatalf("the group's sleep %d is alive 5 s after its group's SIGKILL: %s", sleeper, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestReadyLineRefuses(t *testing.T) {
	if _, err := ReadyLine(strings.NewReader("listening somewhere\n"), "http://", time.Second); err == nil || !strings.Contains(err.Error(), `"listening somewhere\n"`) {
		t.Fatalf("a line without the prefix: %v", err)
	}
	r, w := io.Pipe()
	defer w.Close()
	if _, err := ReadyLine(r, "http://", 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no line within 50ms") {
		t.Fatalf("silence: %v", err)
	}
}
