// ---- tee ----

function readableStreamTee(s) {
  if (s.controller.byte) return readableByteStreamTee(s);
  const reader = newDefaultReaderRecord(s);
  let reading = false, readAgain = false, canceled1 = false, canceled2 = false;
  let reason1, reason2, branch1, branch2;
  const cancelPromise = deferred();
  const pullAlgorithm = () => {
    if (reading) { readAgain = true; return resolved(undefined); }
    reading = true;
    readableStreamDefaultReaderRead(reader, {
      chunk: (chunk) => microtask(() => {
        readAgain = false;
        if (!canceled1) defaultControllerEnqueue(b1.controller, chunk);
        if (!canceled2) defaultControllerEnqueue(b2.controller, chunk);
        reading = false;
        if (readAgain) pullAlgorithm();
      }),
      close: () => {
        reading = false;
        if (!canceled1) defaultControllerClose(b1.controller);
        if (!canceled2) defaultControllerClose(b2.controller);
        if (!canceled1 || !canceled2) cancelPromise.resolve(undefined);
      },
      error: () => { reading = false; },
    });
    return resolved(undefined);
  };
  const cancel1 = (reason) => {
    canceled1 = true;
    reason1 = reason;
    if (canceled2) cancelPromise.resolve(readableStreamCancel(s, [reason1, reason2]));
    return cancelPromise.promise;
  };
  const cancel2 = (reason) => {
    canceled2 = true;
    reason2 = reason;
    if (canceled1) cancelPromise.resolve(readableStreamCancel(s, [reason1, reason2]));
    return cancelPromise.promise;
  };
  const start = () => undefined;
  branch1 = createReadableStream(start, pullAlgorithm, cancel1);
  branch2 = createReadableStream(start, pullAlgorithm, cancel2);
  const b1 = internal.readableRecord(branch1), b2 = internal.readableRecord(branch2);
  then(reader.closed.promise, undefined, (r) => {
    defaultControllerError(b1.controller, r);
    defaultControllerError(b2.controller, r);
    if (!canceled1 || !canceled2) cancelPromise.resolve(undefined);
  });
  return [branch1, branch2];
}

// ReadableByteStreamTee: a branch with a pending BYOB read pulls from the
// source with a BYOB reader into that read's view (so `read(view, { min })`
// on one branch reaches the source as it is), a branch without one through
// a default reader; the other branch gets a copy.
function readableByteStreamTee(s) {
  let reader = newDefaultReaderRecord(s);
  let reading = false, readAgain1 = false, readAgain2 = false, canceled1 = false, canceled2 = false;
  let reason1, reason2, b1, b2;
  const cancelPromise = deferred();
  const forwardReaderError = (thisReader) => {
    then(thisReader.closed.promise, undefined, (r) => {
      if (thisReader !== reader) return;
      byteControllerError(b1.controller, r);
      byteControllerError(b2.controller, r);
      if (!canceled1 || !canceled2) cancelPromise.resolve(undefined);
    });
  };
  // CloneAsUint8Array; a failure errors both branches and cancels the source
  const cloneOrFail = (chunk) => {
    try {
      return new Uint8Array(chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength));
    } catch (e) {
      byteControllerError(b1.controller, e);
      byteControllerError(b2.controller, e);
      cancelPromise.resolve(readableStreamCancel(s, e));
      return null;
    }
  };
  const readAgain = () => {
    if (readAgain1) pull1();
    else if (readAgain2) pull2();
  };
  const pullWithDefaultReader = () => {
    if (reader.byob) {
      readableStreamBYOBReaderRelease(reader);
      reader = newDefaultReaderRecord(s);
      forwardReaderError(reader);
    }
    readableStreamDefaultReaderRead(reader, {
      chunk: (chunk) => microtask(() => {
        readAgain1 = false;
        readAgain2 = false;
        let chunk2 = chunk;
        if (!canceled1 && !canceled2) {
          chunk2 = cloneOrFail(chunk);
          if (chunk2 === null) return;
        }
        if (!canceled1) byteControllerEnqueue(b1.controller, chunk);
        if (!canceled2) byteControllerEnqueue(b2.controller, chunk2);
        reading = false;
        readAgain();
      }),
      close: () => {
        reading = false;
        if (!canceled1) byteControllerClose(b1.controller);
        if (!canceled2) byteControllerClose(b2.controller);
        if (b1.controller.pendingPullIntos.length > 0) byteControllerRespond(b1.controller, 0);
        if (b2.controller.pendingPullIntos.length > 0) byteControllerRespond(b2.controller, 0);
        if (!canceled1 || !canceled2) cancelPromise.resolve(undefined);
      },
      error: () => { reading = false; },
    });
  };
  const pullWithBYOBReader = (view, forBranch2) => {
    if (!reader.byob) {
      readableStreamDefaultReaderRelease(reader);
      reader = newBYOBReaderRecord(s);
      forwardReaderError(reader);
    }
    const byobBranch = forBranch2 ? b2 : b1;
    const otherBranch = forBranch2 ? b1 : b2;
    readableStreamBYOBReaderRead(reader, view, 1, {
      chunk: (chunk) => microtask(() => {
        readAgain1 = false;
        readAgain2 = false;
        const byobCanceled = forBranch2 ? canceled2 : canceled1;
        const otherCanceled = forBranch2 ? canceled1 : canceled2;
        if (!otherCanceled) {
          const cloned = cloneOrFail(chunk);
          if (cloned === null) return;
          if (!byobCanceled) byteControllerRespondWithNewView(byobBranch.controller, chunk);
          byteControllerEnqueue(otherBranch.controller, cloned);
        } else if (!byobCanceled) {
          byteControllerRespondWithNewView(byobBranch.controller, chunk);
        }
        reading = false;
        readAgain();
      }),
      close: (chunk) => {
        reading = false;
        const byobCanceled = forBranch2 ? canceled2 : canceled1;
        const otherCanceled = forBranch2 ? canceled1 : canceled2;
        if (!byobCanceled) byteControllerClose(byobBranch.controller);
        if (!otherCanceled) byteControllerClose(otherBranch.controller);
        if (chunk !== undefined) {
          if (!byobCanceled) byteControllerRespondWithNewView(byobBranch.controller, chunk);
          if (!otherCanceled && otherBranch.controller.pendingPullIntos.length > 0) byteControllerRespond(otherBranch.controller, 0);
        }
        if (!byobCanceled || !otherCanceled) cancelPromise.resolve(undefined);
      },
      error: () => { reading = false; },
    });
  };
  const pull = (branch, forBranch2) => {
    reading = true;
    const request = byteControllerGetBYOBRequest(branch.controller);
    if (request === null) pullWithDefaultReader();
    else pullWithBYOBReader(internal.byobRequestView(request), forBranch2);
    return resolved(undefined);
  };
  const pull1 = () => {
    if (reading) { readAgain1 = true; return resolved(undefined); }
    return pull(b1, false);
  };
  const pull2 = () => {
    if (reading) { readAgain2 = true; return resolved(undefined); }
    return pull(b2, true);
  };
  const cancel1 = (reason) => {
    canceled1 = true;
    reason1 = reason;
    if (canceled2) cancelPromise.resolve(readableStreamCancel(s, [reason1, reason2]));
    return cancelPromise.promise;
  };
  const cancel2 = (reason) => {
    canceled2 = true;
    reason2 = reason;
    if (canceled1) cancelPromise.resolve(readableStreamCancel(s, [reason1, reason2]));
    return cancelPromise.promise;
  };
  const start = () => undefined;
  const branch1 = createReadableByteStream(start, pull1, cancel1);
  const branch2 = createReadableByteStream(start, pull2, cancel2);
  b1 = internal.readableRecord(branch1);
  b2 = internal.readableRecord(branch2);
  forwardReaderError(reader);
  return [branch1, branch2];
}

