/* libqkv's own thread pool (qkv_threadpool_create): n_threads - 1 workers and the calling
 * thread, which runs task 0.
 *
 * One job at a time. run() takes the pool's call lock (so concurrent callers of one pool
 * are serialized, never mixed), publishes the job and bumps a generation counter; every
 * worker, having seen the new generation, runs its task if its index is below n_tasks and
 * then counts itself done; run() returns when all workers have. So a worker never misses
 * a job or runs one twice, and the job's fields are not rewritten while a worker may still
 * read them.
 *
 * Waiting. A worker that finished a job spins on the generation for about SPIN_NS (0.1 ms:
 * the next job of a driver usually follows well within it, and a futex wake-up costs tens
 * of microseconds, a GEMM of 256^3 on two cores about 100) and then sleeps on a
 * condition variable, so an idle pool costs no CPU. The caller, once its own task is done,
 * spins likewise on the count of workers still busy before it sleeps.
 *
 * A task must not call run() on the pool that runs it (the call lock would deadlock). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "threadpool.h"

enum { SPIN_NS = 100000 }; /* spin this long before sleeping */

typedef struct pool {
    qkv_threadpool pub;  /* first: the public handle is the pool */
    pthread_mutex_t call; /* one run() at a time */
    pthread_mutex_t lock; /* guards sleeping and waking */
    pthread_cond_t wake;  /* workers: a new generation (or stop) */
    pthread_cond_t done;  /* caller: the last worker finished */
    atomic_uint gen;      /* job number */
    atomic_size_t busy;   /* workers that have not finished the current job */
    atomic_int stop;
    /* the current job, written before gen is bumped */
    void (*task)(void *arg, size_t t);
    void *arg;
    size_t n_tasks;
    size_t n_workers;
    pthread_t *threads;
} pool;

typedef struct worker_arg {
    pool *p;
    size_t index; /* task index this worker runs: 1 .. n_workers */
} worker_arg;

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

static void *worker_main(void *arg)
{
    worker_arg *w = arg;
    pool *p = w->p;
    unsigned seen = 0;
    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load_explicit(&p->stop, memory_order_acquire))
            break;
        if (w->index < p->n_tasks)
            p->task(p->arg, w->index);
        if (atomic_fetch_sub_explicit(&p->busy, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
    free(w);
    return NULL;
}

static void pool_run(void *handle, void (*task)(void *arg, size_t t), void *arg, size_t n_tasks)
{
    pool *p = handle;
    if (n_tasks == 0)
        return;
    if (p->n_workers == 0 || n_tasks == 1) {
        for (size_t t = 0; t < n_tasks; t++) /* n_tasks <= n_threads == 1, or one task */
            task(arg, t);
        return;
    }
    pthread_mutex_lock(&p->call);
    p->task = task;
    p->arg = arg;
    p->n_tasks = n_tasks;
    atomic_store_explicit(&p->busy, p->n_workers, memory_order_relaxed);
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    task(arg, 0);

    const long long until = now_ns() + SPIN_NS;
    for (unsigned i = 0; atomic_load_explicit(&p->busy, memory_order_acquire) != 0; i++) {
        cpu_relax();
        if ((i & 63) == 63 && now_ns() > until) {
            pthread_mutex_lock(&p->lock);
            while (atomic_load_explicit(&p->busy, memory_order_acquire) != 0)
                pthread_cond_wait(&p->done, &p->lock);
            pthread_mutex_unlock(&p->lock);
            break;
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
    atomic_init(&p->busy, 0);
    atomic_init(&p->stop, 0);
    p->pub = (qkv_threadpool){n_threads, pool_run, p};
    for (size_t i = 0; i < p->n_workers; i++) {
        worker_arg *w = malloc(sizeof *w);
        if (w != NULL)
            *w = (worker_arg){p, i + 1};
        if (w == NULL || pthread_create(&p->threads[i], NULL, worker_main, w) != 0) {
            free(w);
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
