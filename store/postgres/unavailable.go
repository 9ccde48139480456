package postgres

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/jackc/pgx/v5/pgconn"
)

// connectTimeout bounds a connection attempt when the URL sets no
// connect_timeout: a database that does not answer (a host gone, a
// network cut) fails a request in this time with store.ErrUnavailable
// instead of holding it until the client gives up.
const connectTimeout = 5 * time.Second

// unavailable returns err wrapped with store.ErrUnavailable when it says
// the database cannot be reached (see isUnreachable), else err.
func unavailable(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) || !isUnreachable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// isUnreachable reports whether err is a connection that failed or was
// lost, or a server that refuses work while it shuts down or starts:
// what a restart or an outage of the database looks like, not a fault
// of the statement.
func isUnreachable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08 is a connection exception; 57P01-57P03 are an
		// administrator's or a crash's shutdown and a server that cannot
		// take connections yet.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
