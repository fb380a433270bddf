/* Internal: running a driver's work items on a caller's qkv_threadpool (include/qkv.h).
 *
 * The execution model (every driver): the plan, on the calling thread, cuts the work into
 * items by the problem's shape only; qkv_parallel_for() starts min(n_threads, items) tasks
 * of the pool, and each task takes items from a shared atomic counter until none is left,
 * using only scratch slot `slot` (its task index) of the workspace. Items write disjoint
 * outputs, so which task runs an item, and in which order, never changes a result: the
 * results are bit-identical for every thread count. Baseline flags. */
#ifndef QKV_THREADPOOL_H
#define QKV_THREADPOOL_H

#include <stddef.h>

#include "qkv.h"

/* 1 if tp is NULL (the calling thread only) or usable: run set and n_threads >= 1 */
static inline int qkv_threadpool_ok(const qkv_threadpool *tp)
{
    return tp == NULL || (tp->run != NULL && tp->n_threads >= 1);
}

/* tasks a job of n_items items uses on tp: min(n_threads, n_items), at least 1 */
static inline size_t qkv_tasks_for(const qkv_threadpool *tp, size_t n_items)
{
    const size_t threads = tp ? tp->n_threads : 1;
    return n_items == 0 ? 1 : (n_items < threads ? n_items : threads);
}

/* fn(ctx, item, slot) for every item < n_items, spread over qkv_tasks_for(tp, n_items)
   tasks of tp (tp == NULL or one task: on the calling thread, in item order); slot is the
   task index, < qkv_tasks_for(tp, n_items). Returns when every item is done. */
typedef void (*qkv_item_fn)(void *ctx, size_t item, size_t slot);
void qkv_parallel_for(const qkv_threadpool *tp, size_t n_items, qkv_item_fn fn, void *ctx);

#endif
