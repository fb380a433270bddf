/* libqkv's own thread pool (qkv_threadpool_create): n_threads - 1 workers and the calling
 * thread, which runs task 0.
 *
 * One job at a time. run() takes the pool's call lock (so concurrent callers of one pool
 * are serialized, never mixed), publishes the job and bumps a generation counter. The
 * tasks are claimed, not assigned: whoever moves the job's claim word (its generation, its
 * task count and the next unclaimed task) forward with a compare-and-swap runs that task;
 * the workers as they see the job, the caller after its own task 0. So every task runs
 * exactly once, whatever n_tasks is, and the caller does not wait for a worker that has
 * not started (one that claimed a task and was then preempted is waited for): a worker
 * slow to wake (asleep, or its CPU taken by another process of a shared machine) finds the
 * job's tasks claimed and goes back to waiting, while the caller has run them (the tasks
 * of qkv_parallel_for find no item left by then and return at once). On a 2-vCPU KVM guest
 * (Emerald Rapids Xeon), where waking a sleeping worker took about 200 us, calls 2 ms
 * apart (the worker asleep), medians of 3-4 runs: 64 x 256 x 256 on two threads 419-426 us
 * with a task assigned to the worker, 102-111 us claimed (one thread: 103-111); 256^3
 * 575-621 -> 364-396 us (one thread 289-324); back to back, level. Before, tasks past
 * n_threads were not run at all. run() returns when every claimed task has finished; a
 * worker's claim is tied to the generation it saw, so a late worker cannot claim a task of
 * a later job as one of an earlier one.
 *
 * Waiting. A worker that finished a job spins on the generation for about SPIN_NS (0.1 ms:
 * the next job of a driver usually follows well within it, and a futex wake-up costs tens
 * of microseconds, a GEMM of 256^3 on two cores about 100) and then sleeps on a
 * condition variable, so an idle pool costs no CPU. The caller, once no task is left to
 * claim, spins likewise on the count of finished tasks before it sleeps.
 *
 * A task must not call run() on the pool that runs it (the call lock would deadlock). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "threadpool.h"

enum { SPIN_NS = 100000 }; /* spin this long before sleeping */

/* the claim word: generation (low GEN_BITS bits) | n_tasks | next unclaimed task */
enum { TASK_BITS = 20, GEN_BITS = 64 - 2 * TASK_BITS };
#define TASK_MASK ((1ull << TASK_BITS) - 1)
#define GEN_MASK ((1ull << GEN_BITS) - 1)

typedef struct pool {
    qkv_threadpool pub;  /* first: the public handle is the pool */
    pthread_mutex_t call; /* one run() at a time */
    pthread_mutex_t lock; /* guards sleeping and waking */
    pthread_cond_t wake;  /* workers: a new generation (or stop) */
    pthread_cond_t done;  /* caller: the job's last task finished */
    atomic_uint gen;      /* job number */
    atomic_ullong claim;  /* the current job's claim word (claim_word()) */
    atomic_size_t finished; /* tasks of the current job that have returned */
    atomic_int stop;
    /* the current job, written before its claim word is published */
    void (*task)(void *arg, size_t t);
    void *arg;
    size_t n_workers;
    pthread_t *threads;
} pool;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* wait until gen differs from seen (or stop): spin, then sleep */
static unsigned wait_for_job(pool *p, unsigned seen)
{
    const long long until = now_ns() + SPIN_NS;
    for (unsigned i = 0;; i++) {
        const unsigned g = atomic_load_explicit(&p->gen, memory_order_acquire);
        if (g != seen || atomic_load_explicit(&p->stop, memory_order_acquire))
            return g;
        cpu_relax();
        if ((i & 63) == 63 && now_ns() > until)
            break;
    }
    pthread_mutex_lock(&p->lock);
    unsigned g;
    while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen &&
           !atomic_load_explicit(&p->stop, memory_order_acquire))
        pthread_cond_wait(&p->wake, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return g;
}

static unsigned long long claim_word(unsigned gen, size_t n_tasks, size_t next)
{
    return ((unsigned long long)gen & GEN_MASK) << (2 * TASK_BITS) | (unsigned long long)n_tasks << TASK_BITS | next;
}

/* claims the next task of job gen: its index (and the job's task count in *n_tasks), or
   SIZE_MAX when every task is claimed or the current job is another one */
static size_t claim(pool *p, unsigned gen, size_t *n_tasks)
{
    unsigned long long c = atomic_load_explicit(&p->claim, memory_order_acquire);
    for (;;) {
        const size_t next = (size_t)(c & TASK_MASK), n = (size_t)(c >> TASK_BITS & TASK_MASK);
        if ((c >> (2 * TASK_BITS)) != (gen & GEN_MASK) || next >= n)
            return SIZE_MAX;
        /* acquire: the job's task and arg, written before its claim word was published */
        if (atomic_compare_exchange_weak_explicit(&p->claim, &c, c + 1, memory_order_acq_rel, memory_order_acquire)) {
            *n_tasks = n;
            return next;
        }
    }
}

static void *worker_main(void *arg)
{
    pool *p = arg;
    unsigned seen = 0;
    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load_explicit(&p->stop, memory_order_acquire))
            break;
        size_t t, n_tasks;
        while ((t = claim(p, seen, &n_tasks)) != SIZE_MAX) {
            p->task(p->arg, t);
            /* the last task of the job wakes the caller if it sleeps */
            if (atomic_fetch_add_explicit(&p->finished, 1, memory_order_acq_rel) + 1 == n_tasks) {
                pthread_mutex_lock(&p->lock);
                pthread_cond_signal(&p->done);
                pthread_mutex_unlock(&p->lock);
            }
        }
    }
    return NULL;
}

static void pool_run(void *handle, void (*task)(void *arg, size_t t), void *arg, size_t n_tasks)
{
    pool *p = handle;
    if (n_tasks == 0)
        return;
    if (p->n_workers == 0 || n_tasks == 1 || n_tasks > TASK_MASK) {
        for (size_t t = 0; t < n_tasks; t++) /* one thread, one task, or (absurdly) many */
            task(arg, t);
        return;
    }
    pthread_mutex_lock(&p->call);
    p->task = task;
    p->arg = arg;
    atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
    const unsigned gen = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
    /* task 0 is the caller's; release: task and arg before the claim word */
    atomic_store_explicit(&p->claim, claim_word(gen, n_tasks, 1), memory_order_release);
    pthread_mutex_lock(&p->lock);
    atomic_store_explicit(&p->gen, gen, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    task(arg, 0);
    size_t own = 1, t, n;
    while ((t = claim(p, gen, &n)) != SIZE_MAX) { /* what no worker has claimed yet */
        task(arg, t);
        own++;
    }
    if (atomic_fetch_add_explicit(&p->finished, own, memory_order_acq_rel) + own != n_tasks) {
        const long long until = now_ns() + SPIN_NS;
        for (unsigned i = 0; atomic_load_explicit(&p->finished, memory_order_acquire) != n_tasks; i++) {
            cpu_relax();
            if ((i & 63) == 63 && now_ns() > until) {
                pthread_mutex_lock(&p->lock);
                while (atomic_load_explicit(&p->finished, memory_order_acquire) != n_tasks)
                    pthread_cond_wait(&p->done, &p->lock);
                pthread_mutex_unlock(&p->lock);
                break;
            }
        }
    }
    pthread_mutex_unlock(&p->call);
}

static void pool_free(pool *p)
{
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->call);
    free(p->threads);
    free(p);
}

/* stops and joins the first `started` workers */
static void stop_workers(pool *p, size_t started)
{
    pthread_mutex_lock(&p->lock);
    atomic_store_explicit(&p->stop, 1, memory_order_release);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (size_t i = 0; i < started; i++)
        pthread_join(p->threads[i], NULL);
}

qkv_threadpool *qkv_threadpool_create(size_t n_threads)
{
    if (n_threads == 0) {
        const long online = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = online > 0 ? (size_t)online : 1;
    }
    pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->n_workers = n_threads - 1;
    p->threads = p->n_workers ? calloc(p->n_workers, sizeof *p->threads) : NULL;
    if ((p->n_workers && p->threads == NULL) || pthread_mutex_init(&p->call, NULL) != 0) {
        free(p->threads);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->claim, claim_word(0, 0, 0)); /* job 0: no task */
    atomic_init(&p->finished, 0);
    atomic_init(&p->stop, 0);
    p->pub = (qkv_threadpool){n_threads, pool_run, p};
    for (size_t i = 0; i < p->n_workers; i++) {
        if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0) {
            stop_workers(p, i);
            pool_free(p);
            return NULL;
        }
    }
    return &p->pub;
}

void qkv_threadpool_destroy(qkv_threadpool *tp)
{
    if (tp == NULL)
        return;
    pool *p = (pool *)tp;
    stop_workers(p, p->n_workers);
    pool_free(p);
}

/* ---- work items on any caller pool ------------------------------------------------- */

typedef struct job {
    qkv_item_fn fn;
    void *ctx;
    size_t n_items;
    atomic_size_t next;
} job;

static void job_task(void *arg, size_t slot)
{
    job *j = arg;
    for (size_t i; (i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < j->n_items;)
        j->fn(j->ctx, i, slot);
}

void qkv_parallel_for(const qkv_threadpool *tp, size_t n_items, qkv_item_fn fn, void *ctx)
{
    const size_t tasks = qkv_tasks_for(tp, n_items);
    if (tasks <= 1) {
        for (size_t i = 0; i < n_items; i++)
            fn(ctx, i, 0);
        return;
    }
    job j = {fn, ctx, n_items, 0};
    tp->run(tp->pool, job_task, &j, tasks);
}
