package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/aiperf-action/aiperf-action/internal/judge"
)

// Noise writes a testbed's measured noise and the tolerance each mode
// reaches: text (a table), markdown or json.
func Noise(w io.Writer, format string, rows []judge.NoiseRow) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(struct {
			Statistics []judge.NoiseRow `json:"statistics"`
		}{rows}, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "text", "", "markdown":
	default:
		return fmt.Errorf("unknown format %q", format)
	}
	if len(rows) == 0 {
		return nil
	}
	head := []string{"statistic", "runs", "jobs", "job noise", "run noise", "within a run"}
	for _, r := range rows[0].Reach {
		if r.Mode == "unpaired" {
			head = append(head, fmt.Sprintf("unpaired, %d runs vs %d", r.Runs, r.Baseline))
		} else {
			head = append(head, fmt.Sprintf("paired, %d pairs", r.Runs))
		}
	}
	var lines [][]string
	for _, r := range rows {
		job := pct(r.JobNoise)
		if r.Floored {
			job = "≥ " + job + " (floor: under 3 jobs)"
		}
		l := []string{r.Name(), fmt.Sprint(r.Runs), fmt.Sprint(r.Jobs), job, pct(r.RunNoise), pct(r.Within)}
		for _, x := range r.Reach {
			if x.Tolerance == 0 {
				l = append(l, "not measured (no job has 2 runs)")
			} else {
				l = append(l, pct(x.Tolerance))
			}
		}
		lines = append(lines, l)
	}
	if format == "markdown" {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, l := range lines {
			for i := range l {
				l[i] = EscapeMarkdown(l[i])
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(l, " | "))
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, l := range lines {
			fmt.Fprintln(tw, strings.Join(l, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\nThe last columns are the tolerance an unchanged PR passes 4 times in 5 at (a fixed design at --alpha; adaptive looks reach a little less at their last look). Set max-regression at or above the mode's figure, or use the mode that reaches yours. From 3 jobs on, the job noise is moderated toward --job-noise-floor with --job-noise-prior jobs' weight, so a few jobs of a quiet runner read near the floor until more are stored.\n")
	return err
}
