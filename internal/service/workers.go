package service

import "context"

// workerPool is the state of a Queue's own workers (Serve), guarded by
// the queue's mutex.
type workerPool struct {
	// start runs a worker in a goroutine its owner waits for (a
	// Lifecycle's Go), or reports false; nil until Serve.
	start func(func()) bool
	// worker is the body of one worker.
	worker func()
	// max is how many workers may run at once; running how many do.
	max, running int
}

// Serve makes the queue run its own workers, up to n at once, each in a
// goroutine of start (a Lifecycle's Go, which owns and waits for it): a
// worker starts when a key is pushed and every running worker holds a
// key already, calls work for each key it takes (Done follows by
// itself), and ends as soon as no key waits, or when ctx ends. An idle
// queue so holds no goroutine: the wake engine's 64 workers parked on
// an empty queue were most of an idle server's goroutine stacks, and
// the collector scanned each of them at every cycle. Keys pushed before
// Serve are taken at once. Serve is called once; Pop is not used with it.
func (q *Queue[V]) Serve(ctx context.Context, n int, start func(func()) bool, work func(key string, v V)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pool = workerPool{start: start, max: max(n, 1), worker: func() {
		for {
			key, v, ok := q.next(ctx)
			if !ok {
				return
			}
			work(key, v)
			q.Done(key)
		}
	}}
	for q.spawn() {
	}
}

// next takes the oldest waiting key for a worker of Serve, or, when
// none waits (or ctx ended, or the queue is closed), counts the worker
// out and reports false: under the same lock as a push's spawn, so a
// key is never left without a worker.
func (q *Queue[V]) next(ctx context.Context) (key string, v V, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || ctx.Err() != nil || q.head == len(q.order) {
		q.pool.running--
		return "", v, false
	}
	key, v = q.take()
	return key, v, true
}

// spawn starts a worker, under mu, when Serve was called, fewer than its
// n run, and more keys wait than there are workers holding none; it
// reports whether it started one.
func (q *Queue[V]) spawn() bool {
	p := &q.pool
	if p.start == nil || q.closed || p.running >= p.max || p.running-len(q.running) >= len(q.order)-q.head {
		return false
	}
	p.running++
	if !p.start(p.worker) {
		p.running--
		return false
	}
	return true
}

// Workers returns how many workers of Serve run now.
func (q *Queue[V]) Workers() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pool.running
}
