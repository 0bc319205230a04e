/* The decode step's own threads: the caller returns once a step's jobs are done, not once every thread has seen them.
 *
 * Why not OpenMP's team: its parallel region ends with a barrier, so a thread held off its core near the end of a
 * step held up the step's return (and the next token) until it ran again; decode_step.c had removed the barriers
 * inside the step only. Here the workers follow the posted step's phases by their numbers; one that comes back late
 * finds those phases over, drops what it computed and waits for the next step.
 *
 * Memory: a late worker still reads the model's buffers (never writes them: decode_step.c publishes only what wins
 * its job word). So whatever frees or moves those buffers (the arena grown, the cache reserved, a matrix packed, the
 * model freed) first calls ll_step_quiesce, which retires the posted steps and waits for every worker to be out of
 * them.
 */
#define _POSIX_C_SOURCE 200809L
#include "model_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* An idle worker spins this long for the next step (a token's Python part), then sleeps; with OMP_WAIT_POLICY=PASSIVE
 * (what a busy machine's replies are advised, core/timing/cpu_share.py) it sleeps at once, as OpenMP's threads do. */
#define SPIN_NS 2000000

struct step_pool;
typedef struct {
    struct step_pool *pool;
    int tid;
} worker_id;

struct step_pool {
    ll_model *m;
    int workers;
    pthread_t thread[LL_MAX_STEP_THREADS];
    worker_id ids[LL_MAX_STEP_THREADS];
    _Alignas(64) uint64_t seq;      /* a seqlock over request: odd while the caller writes it; a step's ticket */
    step_request request;
    _Alignas(64) uint64_t retired;  /* steps up to this seq value must not be entered (ll_step_quiesce) */
    _Alignas(64) int inside;        /* workers inside a step */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int sleeping, stop;
    uint64_t spin_ns;
};

/* The tests' late worker (ll_step_worker_delay): new workers wait this long before they look at the pool, as a
 * thread the machine starts late would, so that the pool's first step is posted before they do. */
static int worker_delay_micros;

LL_API void ll_step_worker_delay(int32_t micros) {
    __atomic_store_n(&worker_delay_micros, micros, __ATOMIC_RELAXED);
}

static uint64_t clock_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The latest posted step, read whole (or 0 when the caller is writing one: try again). */
static uint64_t read_request(struct step_pool *pool, step_request *request) {
    const uint64_t before = __atomic_load_n(&pool->seq, __ATOMIC_ACQUIRE);
    if (before & 1) return 0;
    memcpy(request, &pool->request, sizeof *request);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&pool->seq, __ATOMIC_RELAXED) == before ? before : 0;
}

static void *work(void *argument) {
    const worker_id *id = argument;
    struct step_pool *pool = id->pool;
    const int tid = id->tid;
    const int delay = __atomic_load_n(&worker_delay_micros, __ATOMIC_RELAXED);
    if (delay > 0) {
        const struct timespec pause = {delay / 1000000, (long)(delay % 1000000) * 1000};
        nanosleep(&pause, NULL);
    }
    /* The seq the pool started at (start_pool zeroes it), not the seq read now: ll_step_post starts the pool and
     * posts its first step at once, and a worker that reached this line after the post took that step for one it had
     * run, leaving it to the caller alone. */
    uint64_t seen = 0;
    for (;;) {
        const uint64_t waiting_since = clock_ns();
        while (__atomic_load_n(&pool->seq, __ATOMIC_ACQUIRE) == seen && !__atomic_load_n(&pool->stop, __ATOMIC_ACQUIRE)) {
            if (clock_ns() - waiting_since < pool->spin_ns) {
                __builtin_ia32_pause();
                continue;
            }
            pthread_mutex_lock(&pool->lock);
            __atomic_fetch_add(&pool->sleeping, 1, __ATOMIC_SEQ_CST);  /* before the check: the poster sees it */
            while (__atomic_load_n(&pool->seq, __ATOMIC_SEQ_CST) == seen && !pool->stop)
                pthread_cond_wait(&pool->wake, &pool->lock);
            __atomic_fetch_sub(&pool->sleeping, 1, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&pool->lock);
        }
        if (__atomic_load_n(&pool->stop, __ATOMIC_ACQUIRE)) return NULL;
        /* In before looking at the step: ll_step_quiesce either sees this worker inside or this worker sees the
         * step retired (both sides are sequentially consistent). */
        __atomic_fetch_add(&pool->inside, 1, __ATOMIC_SEQ_CST);
        step_request request;
        const uint64_t ticket = read_request(pool, &request);
        if (ticket && ticket > __atomic_load_n(&pool->retired, __ATOMIC_SEQ_CST)) {
            uint64_t phase = request.phase;
            ll_step_run(pool->m, &request, tid, &phase);
        }
        __atomic_fetch_sub(&pool->inside, 1, __ATOMIC_SEQ_CST);
        if (ticket) seen = ticket;
    }
}

static void stop_pool(ll_model *m) {
    struct step_pool *pool = m->pool;
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    pool->stop = 1;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->workers; i++) pthread_join(pool->thread[i], NULL);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->wake);
    free(pool);
    m->pool = NULL;
}

static int start_pool(ll_model *m, int workers) {
    struct step_pool *pool = aligned_alloc(64, (sizeof *pool + 63) / 64 * 64);
    if (!pool) return -1;
    memset(pool, 0, sizeof *pool);
    pool->m = m;
    const char *policy = getenv("OMP_WAIT_POLICY");
    pool->spin_ns = policy && (strcmp(policy, "PASSIVE") == 0 || strcmp(policy, "passive") == 0) ? 0 : SPIN_NS;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    m->pool = pool;
    for (int i = 0; i < workers; i++) {
        pool->ids[i] = (worker_id){pool, i + 1};
        if (pthread_create(&pool->thread[i], NULL, work, &pool->ids[i])) {
            stop_pool(m);
            return -1;
        }
        pool->workers = i + 1;
    }
    return 0;
}

void ll_step_quiesce(ll_model *m) {
    struct step_pool *pool = m->pool;
    if (!pool) return;
    __atomic_store_n(&pool->retired, __atomic_load_n(&pool->seq, __ATOMIC_ACQUIRE), __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&pool->inside, __ATOMIC_SEQ_CST)) __builtin_ia32_pause();
}

void ll_step_stop(ll_model *m) { stop_pool(m); }

int ll_step_post(ll_model *m, const step_request *request) {
    if (m->pool && m->pool->workers != request->threads - 1) stop_pool(m);
    if (!m->pool && start_pool(m, request->threads - 1)) return -1;
    struct step_pool *pool = m->pool;
    __atomic_store_n(&pool->seq, pool->seq + 1, __ATOMIC_RELAXED);  /* odd: being written */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy(&pool->request, request, sizeof *request);
    __atomic_store_n(&pool->seq, pool->seq + 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);  /* the new step visible before sleepers are counted (see work) */
    if (__atomic_load_n(&pool->sleeping, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&pool->lock);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->lock);
    }
    return 0;
}
