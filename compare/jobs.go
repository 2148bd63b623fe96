package compare

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// needed is how many runs an unchanged candidate needs to pass 4 times in
// 5: the interval's upper end, (t(1−α) + z(0.8))·se above the true zero,
// must stay below the tolerance. se² = (b+w_b)/K + (b+w_c)/R; when even
// endless candidate runs leave (b+w_b)/K too large, K and R must both grow
// to the smallest n (up to 1000) with (2b + w_b + w_c)/n within the room
// that t(1−α, n−1) leaves.
func needed(w oneWork, k, r int, alpha float64) (needK, needR int) {
	z := distuv.UnitNormal.Quantile(0.8)
	room := math.Pow(w.delta/(w.q+z), 2)
	if rest := room - (w.between+w.wb)/float64(k); rest > 0 {
		return 0, int(math.Ceil((w.between + w.wc) / rest))
	}
	for n := k + 1; n <= 1000; n++ {
		room := math.Pow(w.delta/(tQuantile(1-alpha, float64(2*n-2))+z), 2)
		if (2*w.between+w.wb+w.wc)/float64(n) <= room {
			return n, max(n, r)
		}
	}
	return 1000, 1000
}

// jobsOf groups the runs' indices by job, in order of first appearance; a
// run without a job is a job of its own.
func jobsOf(ss []Sample) [][]int {
	idx := map[string]int{}
	var out [][]int
	for i, s := range ss {
		key := s.Job
		if key == "" {
			key = fmt.Sprintf("\x00run %d", i)
		}
		j, ok := idx[key]
		if !ok {
			j = len(out)
			idx[key] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], i)
	}
	return out
}

// jobFit is the two-level noise model: log y = μ + job + run + within.
type jobFit struct {
	job, run float64 // variance components (log scale)
	vb, vc   float64 // variances of the baseline's and the candidate's mean
	df       float64 // Satterthwaite's degrees of freedom for se² = vb + vc
	floored  bool    // too few jobs: the job variance is the floor's
	sc       float64 // Σm_j²/R² of the candidate: how much of the job variance its mean keeps
	jobs     int     // jobs the noise was estimated from
	runDF    float64 // degrees of freedom of the run-to-run noise (0: runs never shared a job)
}

// fitJobs estimates the job-to-job and run-to-run variances by one-way
// random-effects ANOVA (method of moments, truncated at zero) from the
// runs yh in jobs jh: the stored history, or the baseline itself; the
// candidate's runs yc, in their jobs jc, add what their spread within a
// job says of the run-to-run noise (a change moves all of a job's runs,
// not their spread). jb is the baseline's jobs, whose mean the comparison
// takes. With fewer than 3 jobs in jh the job variance is at least floor²
// (relative); from 3 on it is moderated toward floor² with prior's weight
// in jobs. wh and wc are the mean within-run variances of jh's and the
// candidate's runs, wb the baseline's.
func fitJobs(yh []float64, jh, jb, jc [][]int, yc []float64, wh, wb, wc, floor, prior float64) *jobFit {
	kh, nj := float64(len(yh)), float64(len(jh))
	grand := mean(yh)
	var ssw, ssb, sumN2 float64
	for _, ix := range jh {
		m, ss := jobMean(yh, ix)
		ssw += ss
		n := float64(len(ix))
		ssb += n * (m - grand) * (m - grand)
		sumN2 += n * n
	}
	f := &jobFit{}
	dfb := nj - 1
	dfwh := kh - nj // the history's own within-job degrees of freedom
	dfw, wWithin := dfwh, dfwh*wh
	if yc != nil {
		for _, ix := range jc {
			_, ss := jobMean(yc, ix)
			ssw += ss
			dfw += float64(len(ix) - 1)
			wWithin += float64(len(ix)-1) * wc
		}
	}
	msw := 0.0
	f.runDF = dfw
	if dfw > 0 {
		msw = ssw / dfw
		f.run = math.Max(msw-wWithin/dfw, 0)
	}
	switch {
	case dfb > 0 && dfwh > 0:
		n0 := (kh - sumN2/kh) / dfb
		f.job = math.Max((ssb/dfb-(f.run+wh))/n0, 0)
	case dfb > 0: // one run per job: job and run noise cannot be told apart here
		f.job = math.Max(ssb/dfb-(f.run+wh), 0)
		if dfw == 0 {
			f.job = math.Max(ssb/dfb-wh, 0) // and nothing else tells them apart: all of it is the job's
		}
	}
	fl := math.Pow(math.Log1p(floor), 2)
	priorDF := 0.0
	if nj < 3 {
		if f.job < fl {
			f.job, f.floored = fl, true
		}
	} else if prior > 0 && dfb > 0 {
		f.job = (prior*fl + dfb*f.job) / (prior + dfb)
		priorDF = prior
	}
	f.jobs = len(jh)
	k := 0.0
	var sumB2 float64
	for _, ix := range jb {
		m := float64(len(ix))
		sumB2 += m * m
		k += m
	}
	sb := sumB2 / (k * k)
	var sumM2, r float64
	for _, ix := range jc {
		m := float64(len(ix))
		sumM2 += m * m
		r += m
	}
	f.sc = sumM2 / (r * r)
	jobPart := f.job * (sb + f.sc)
	runPart := (f.run+wb)/k + (f.run+wc)/r
	f.vb = f.job*sb + (f.run+wb)/k
	f.vc = f.job*f.sc + (f.run+wc)/r
	dfJob, dfRun := math.Inf(1), math.Inf(1)
	if !f.floored && dfb > 0 {
		dfJob = dfb + priorDF
	}
	if dfw > 0 {
		dfRun = dfw
	}
	den := 0.0
	if jobPart > 0 {
		den += jobPart * jobPart / dfJob
	}
	if runPart > 0 {
		den += runPart * runPart / dfRun
	}
	f.df = math.Inf(1)
	if den > 0 {
		f.df = math.Max((jobPart+runPart)*(jobPart+runPart)/den, 1)
	}
	return f
}

// jobMean is the mean of y over one job's runs ix, and their sum of
// squares about it.
func jobMean(y []float64, ix []int) (m, ss float64) {
	for _, i := range ix {
		m += y[i]
	}
	m /= float64(len(ix))
	for _, i := range ix {
		ss += (y[i] - m) * (y[i] - m)
	}
	return m, ss
}

// reachable is the smallest tolerance an unchanged candidate of one job
// passes 4 times in 5 however many runs that job makes: the candidate
// job's own noise, and the baseline's mean as it is, stay.
func (f *jobFit) reachable(w oneWork) float64 {
	z := distuv.UnitNormal.Quantile(0.8)
	return math.Expm1((w.q + z) * math.Sqrt(f.vb+f.job*f.sc))
}
