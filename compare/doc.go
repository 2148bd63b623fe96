// Package compare is the gate's statistics: it decides whether candidate
// runs of a load profile are slower than baseline runs, and says so only
// when the data can bear it.
//
// This package is opinionated. Requests inside one run are not independent
// samples: the machine, the GPU and the batching state move a whole run at
// once, so a test that pools requests (Mann–Whitney on latencies, say)
// mistakes run-to-run drift for a regression again and again. Here the
// unit of replication is the run:
//
//   - each run gives one estimate per gated statistic (a quantile, by
//     Harrell–Davis or empirically, from its HdrHistogram; or a rate), on a
//     log scale, so the effect is a ratio;
//
//   - the uncertainty of each run's estimate is measured within the run: a
//     quantile's from its order statistics (QuantileLogVar), a rate's by a
//     moving-block bootstrap over its time windows (neighbouring windows are
//     correlated, so whole blocks are resampled);
//
//   - the spread between runs comes from the baseline's and the candidate's
//     runs, or from a stated noise floor when K = 1, in which case every
//     verdict is provisional; when runs come in jobs, job-to-job and
//     run-to-run noise are fitted apart, from the stored history's jobs
//     (Input.History) where it has more than the baseline;
//
//   - the two combine into an interval for log(candidate / baseline):
//
//     d = mean(log q_cand) − mean(log q_base)
//     se² = v_base/K + v_cand/R,  v = σ²_between + mean within-run variance
//     interval = d ± t(1−α, K−1)·se
//
//   - against a tolerance δ (say 5%) the verdict has three values: FAIL when
//     the whole interval is worse than δ, PASS when the whole interval is
//     better than δ, INCONCLUSIVE otherwise. Failing is held to Hommel's
//     correction across the gated statistics (valid for their positive
//     dependence), so gating more metrics does not raise the false-alarm
//     rate; a PASS needs every statistic's own PASS (intersection–union, at
//     α without a correction);
//
//   - every result states its minimum detectable effect: the regression
//     this comparison would catch four times in five.
//
// Statistical caveats (too few runs, too few samples, one window,
// mismatched profiles) are returned as warnings and never abort.
// The package does no I/O and imports nothing from the application.
package compare
