/*-------------------------------------------------------------------------
 *
 * budget.h
 *	  The memory budget (budget.c): bytes of bodies and responses held, in
 *	  all and per client address.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_BUDGET_H
#define TSGW_BUDGET_H

#include <stdbool.h>
#include <stddef.h>

#include "reqtypes.h"

extern bool budget_init(void);
extern bool mem_reserve(size_t n, bool may_refuse);
extern void mem_release(size_t n);
extern bool addr_charge(AddrSlot *addr, size_t n, bool may_refuse);
extern void addr_release(AddrSlot *addr, size_t n);
extern AddrSlot *addr_join(const char *ip);
extern void addr_leave(AddrSlot *addr);
extern bool req_charge(Req *r, size_t n);
extern void req_release(Req *r, size_t n);

#endif							/* TSGW_BUDGET_H */
