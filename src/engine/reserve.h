/*
 * reserve.h: reservations (R-L2), reserve.c.
 */
#ifndef TIDE_RESERVE_H
#define TIDE_RESERVE_H

#include "engine_int.h"

extern void tide_reserve(TideWork *w, int j, int mode, bool admitted);
extern void tide_holds_clear(TideWork *w);

#endif							/* TIDE_RESERVE_H */
