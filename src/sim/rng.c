/*
 * rng.c: the simulator's pseudo-random numbers, fixed so that a seed gives
 * the same run on every machine.
 *
 * xoshiro256** 1.0 (David Blackman and Sebastiano Vigna, public domain
 * reference at prng.di.unimi.it), its state filled by four successive
 * outputs of splitmix64 started at the user's seed.  Bounded draws use
 * rejection sampling (no modulo bias, no floating point).
 */
#include "sim.h"

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t	z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void
rng_seed(SimRng *r, uint64_t seed)
{
	uint64_t	x = seed;

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

uint64_t
rng_next(SimRng *r)
{
	uint64_t   *s = r->s;
	uint64_t	result = rotl(s[1] * 5, 7) * 9;
	uint64_t	t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Uniform in [0, n): draws above the largest multiple of n are redrawn. */
uint64_t
rng_below(SimRng *r, uint64_t n)
{
	uint64_t	limit;
	uint64_t	x;

	if (n <= 1)
		return 0;
	limit = UINT64_MAX - UINT64_MAX % n;
	do
		x = rng_next(r);
	while (x >= limit);
	return x % n;
}
