// ---- pipeTo ----

function readableStreamPipeTo(source, dest, preventClose, preventAbort, preventCancel, signal) {
  const reader = newDefaultReaderRecord(source);
  const writer = newWriterRecord(dest);
  source.disturbed = true;
  let shuttingDown = false;
  const result = deferred();
  let currentWrite = resolved(undefined);
  let removeAbort = () => {};

  const finalize = (isError, error) => {
    writableStreamDefaultWriterRelease(writer);
    readableStreamDefaultReaderRelease(reader);
    removeAbort();
    if (isError) result.reject(error); else result.resolve(undefined);
  };
  // Calls `k` once every chunk read so far has been written.
  const waitForWritesToFinish = (k) => {
    const old = currentWrite;
    then(old, () => (old !== currentWrite ? waitForWritesToFinish(k) : k()));
  };
  const shutdownWithAction = (action, originalIsError, originalError) => {
    if (shuttingDown) return;
    shuttingDown = true;
    const doTheRest = () => {
      then(action(), () => finalize(originalIsError, originalError), (newError) => finalize(true, newError));
    };
    if (dest.state === 'writable' && !writableStreamCloseQueuedOrInFlight(dest)) waitForWritesToFinish(doTheRest);
    else doTheRest();
  };
  const shutdown = (isError, error) => {
    if (shuttingDown) return;
    shuttingDown = true;
    if (dest.state === 'writable' && !writableStreamCloseQueuedOrInFlight(dest)) {
      waitForWritesToFinish(() => finalize(isError, error));
    } else {
      finalize(isError, error);
    }
  };

  if (signal !== undefined) {
    const abortAlgorithm = () => {
      const error = signal.reason;
      const actions = [];
      if (!preventAbort) actions.push(() => (dest.state === 'writable' ? writableStreamAbort(dest, error) : resolved(undefined)));
      if (!preventCancel) actions.push(() => (source.state === 'readable' ? readableStreamCancel(source, error) : resolved(undefined)));
      shutdownWithAction(() => waitForAll(actions.map((a) => a())), true, error);
    };
    if (signal.aborted) {
      abortAlgorithm();
      return result.promise;
    }
    removeAbort = internal.abortSignalAdd(signal, abortAlgorithm);
  }

  // error and close propagation
  const sourceErrored = (e) => {
    if (!preventAbort) shutdownWithAction(() => writableStreamAbort(dest, e), true, e);
    else shutdown(true, e);
  };
  const destErrored = (e) => {
    if (!preventCancel) shutdownWithAction(() => readableStreamCancel(source, e), true, e);
    else shutdown(true, e);
  };
  const sourceClosed = () => {
    if (!preventClose) shutdownWithAction(() => writableStreamDefaultWriterCloseWithErrorPropagation(writer));
    else shutdown();
  };
  if (source.state === 'errored') sourceErrored(source.storedError);
  else then(reader.closed.promise, undefined, (e) => { if (!shuttingDown) sourceErrored(e); });
  if (dest.state === 'errored') destErrored(dest.storedError);
  else then(writer.closed.promise, undefined, (e) => { if (!shuttingDown) destErrored(e); });
  if (source.state === 'closed') sourceClosed();
  else then(reader.closed.promise, () => { if (!shuttingDown) sourceClosed(); }, () => {});
  if (!shuttingDown && (writableStreamCloseQueuedOrInFlight(dest) || dest.state === 'closed')) {
    const destClosed = new TypeError('the destination writable stream closed before all data could be piped to it');
    if (!preventCancel) shutdownWithAction(() => readableStreamCancel(source, destClosed), true, destClosed);
    else shutdown(true, destClosed);
  }

  // the loop
  const step = () => {
    if (shuttingDown) return;
    then(writer.ready.promise, () => {
      if (shuttingDown) return;
      readableStreamDefaultReaderRead(reader, {
        // The write waits for a microtask, so enqueue() on the source never
        // runs the sink's write() synchronously (whatwg/streams#1243; WPT
        // streams/piping/general-addition.any.js).
        chunk: (chunk) => {
          const written = deferred();
          currentWrite = written.promise;
          microtask(() => {
            if (writer.stream === undefined) written.resolve(undefined); // released by a shutdown meanwhile
            else then(writableStreamDefaultWriterWrite(writer, chunk), () => written.resolve(undefined), () => written.resolve(undefined));
            step();
          });
        },
        close: () => {},
        error: () => {},
      });
    }, () => {});
  };
  step();
  return result.promise;
}

