package history

import (
	"math"
	"sort"
)

// MinSamples is the fewest samples on each side with which a two-sided
// Mann-Whitney U test can reach p < 0.05 at all: with 4 and 4 the most
// extreme ordering has p = 2/70 ≈ 0.029; with 3 and 3 it is 2/20 = 0.1.
// benchstat applies the same rule.
const MinSamples = 4

// Alpha is the significance level below which a change is reported.
const Alpha = 0.05

// MannWhitney is the two-sided Mann-Whitney U test of x against y: U is
// x's statistic (the pairs in which x is larger, ties counting one half),
// P the probability of a U at least that far from mn/2 were the two drawn
// from one distribution. Without ties and for up to 50 samples in all, P
// is exact; otherwise it is the normal approximation with the tie
// correction and the continuity correction (as R's wilcox.test with
// exact=FALSE, correct=TRUE). NaNs are dropped. With no sample on a side
// P is 1.
func MannWhitney(x, y []float64) (u, p float64) {
	x, y = finite(x), finite(y)
	m, n := len(x), len(y)
	if m == 0 || n == 0 {
		return 0, 1
	}
	type obs struct {
		v   float64
		inX bool
	}
	all := make([]obs, 0, m+n)
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	var rx, tieSum float64 // the ranks of x; Σ(t³ - t) over tied groups
	ties := false
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // mean of ranks i+1 .. j
		for k := i; k < j; k++ {
			if all[k].inX {
				rx += rank
			}
		}
		if t := float64(j - i); t > 1 {
			ties = true
			tieSum += t*t*t - t
		}
		i = j
	}
	u = rx - float64(m*(m+1))/2
	mf, nf := float64(m), float64(n)
	if !ties && m+n <= 50 {
		return u, exactP(int(math.Round(u)), m, n)
	}
	N := mf + nf
	mu := mf * nf / 2
	sigma := math.Sqrt(mf * nf / 12 * ((N + 1) - tieSum/(N*(N-1))))
	if sigma == 0 {
		return u, 1 // every value equal
	}
	d := u - mu
	switch {
	case d > 0.5:
		d -= 0.5
	case d < -0.5:
		d += 0.5
	default:
		d = 0
	}
	return u, math.Min(1, math.Erfc(math.Abs(d/sigma)/math.Sqrt2))
}

// exactP is the two-sided p of U = u for samples of m and n without ties:
// the count of orderings whose U is as extreme, over C(m+n, m).
func exactP(u, m, n int) float64 {
	// f[i][j][k]: orderings of i and j values with U = k, built as
	// f(i,j,k) = f(i-1,j,k-j) + f(i,j-1,k) (the largest value is from x
	// or from y); only the counts for this m, n are kept.
	max := m * n
	prev := make([][]float64, n+1) // i-1
	for j := range prev {
		prev[j] = make([]float64, max+1)
		prev[j][0] = 1 // i = 0: one ordering, U = 0
	}
	for i := 1; i <= m; i++ {
		cur := make([][]float64, n+1)
		for j := 0; j <= n; j++ {
			cur[j] = make([]float64, max+1)
			for k := 0; k <= i*j; k++ {
				var c float64
				if k-j >= 0 {
					c = prev[j][k-j]
				}
				if j > 0 {
					c += cur[j-1][k]
				}
				cur[j][k] = c
			}
		}
		prev = cur
	}
	f := prev[n]
	var total, low, high float64
	for k, c := range f {
		total += c
		if k <= u {
			low += c
		}
		if k >= u {
			high += c
		}
	}
	return math.Min(1, 2*math.Min(low, high)/total)
}

func finite(v []float64) []float64 {
	out := v[:0:0]
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}
