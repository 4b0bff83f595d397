// MessageChannel and MessagePort: one isolate's ports, as workerd has them.

// Resolves after `n` rounds of microtasks.
const ticks = async (n) => { for (let i = 0; i < n; i++) await null; };
const nextMessage = (port) => new Promise((resolve) => port.addEventListener('message', resolve, { once: true }));

export default suite(async () => {
  await test('the classes', () => {
    const channel = new MessageChannel();
    assert(channel.port1 instanceof MessagePort && channel.port2 instanceof MessagePort, 'two ports');
    assert(channel.port1 !== channel.port2, 'distinct ports');
    assert(channel.port1 instanceof EventTarget, 'a port is an EventTarget');
    eq(channel.port1, channel.port1, 'the same port each time');
    throws(() => new MessagePort(), TypeError, 'no public constructor');
    eq(Object.prototype.toString.call(channel), '[object MessageChannel]');
    eq(Object.prototype.toString.call(channel.port1), '[object MessagePort]');
    eq(channel.port1.onmessage, null);
    throws(() => MessagePort.prototype.postMessage.call({}, 1), TypeError, 'illegal invocation');
  });
  await test('a message is a structured clone, delivered in a microtask', async () => {
    const { port1, port2 } = new MessageChannel();
    const sent = { a: [1, 2], d: new Date(7), m: new Map([[1, 'x']]) };
    const got = [];
    port2.onmessage = (event) => got.push(event);
    port1.postMessage(sent);
    eq(got.length, 0, 'not delivered synchronously');
    await ticks(3);
    eq(got.length, 1, 'delivered');
    const event = got[0];
    assert(event instanceof MessageEvent, 'a MessageEvent');
    eq(event.type, 'message');
    eq(event.isTrusted, true);
    eq(event.target, port2);
    assert(event.data !== sent && event.data.a !== sent.a, 'a copy');
    deepEq(event.data.a, [1, 2]);
    assert(event.data.d instanceof Date && event.data.d.getTime() === 7, 'Date kept');
    eq(event.data.m.get(1), 'x');
    sent.a.push(3);
    deepEq(event.data.a, [1, 2], 'copied when posted');
  });
  await test('both ways, in order', async () => {
    const { port1, port2 } = new MessageChannel();
    const one = [], two = [];
    port1.onmessage = (e) => one.push(e.data);
    port2.onmessage = (e) => two.push(e.data);
    for (let i = 0; i < 5; i++) port1.postMessage(i);
    port2.postMessage('back');
    await ticks(5);
    deepEq(two, [0, 1, 2, 3, 4]);
    deepEq(one, ['back']);
  });
  await test('a port queues until it starts', async () => {
    const { port1, port2 } = new MessageChannel();
    port1.postMessage('a');
    port1.postMessage('b');
    const got = [];
    await ticks(3);
    port2.addEventListener('message', (e) => got.push(e.data));
    eq(got.length, 0, 'a listener starts the port, delivery is still a microtask away');
    await ticks(3);
    deepEq(got, ['a', 'b'], 'queued messages, in order');
    const { port1: p1, port2: p2 } = new MessageChannel();
    p1.postMessage('c');
    const queued = [];
    p2.start();
    await ticks(3);
    eq(queued.length, 0, 'started with no listener: the message is gone');
    p2.onmessage = (e) => queued.push(e.data);
    p1.postMessage('d');
    await ticks(3);
    deepEq(queued, ['d']);
  });
  await test('removing the last listener queues again', async () => {
    const { port1, port2 } = new MessageChannel();
    const got = [];
    const listener = (e) => got.push(e.data);
    port2.addEventListener('message', listener);
    port1.postMessage(1);
    await ticks(3);
    port2.removeEventListener('message', listener);
    port1.postMessage(2);
    await ticks(3);
    deepEq(got, [1]);
    port2.onmessage = (e) => got.push(e.data);
    await ticks(3);
    deepEq(got, [1, 2], 'kept while no one listened');
    port2.onmessage = null;
    eq(port2.onmessage, null);
  });
  await test('what cannot be cloned throws at post', async () => {
    const { port1, port2 } = new MessageChannel();
    throws(() => port1.postMessage(() => 1), DOMException, 'a function');
    throws(() => port1.postMessage(new Request('http://x/')), DOMException, 'a platform object');
    port2.close();
    throws(() => port1.postMessage(Symbol('s')), DOMException, 'even when the other port is closed');
    port1.postMessage('dropped'); // no error once closed
  });
  await test('no transfer list', () => {
    const { port1 } = new MessageChannel();
    const buffer = new ArrayBuffer(4);
    throws(() => port1.postMessage(buffer, [buffer]), Error, 'a transfer array');
    throws(() => port1.postMessage(buffer, { transfer: [buffer] }), Error, 'a transfer option');
    port1.postMessage(buffer, []);
    port1.postMessage(buffer, { transfer: [] });
    eq(buffer.byteLength, 4, 'not detached');
  });
  await test('close closes both ports and fires close on each', async () => {
    const { port1, port2 } = new MessageChannel();
    const closes = [];
    port1.addEventListener('close', () => closes.push('port1'));
    port2.addEventListener('close', () => closes.push('port2'));
    const got = [];
    port2.onmessage = (e) => got.push(e.data);
    port1.close();
    deepEq(closes.sort(), ['port1', 'port2']);
    port1.postMessage('after');
    port2.postMessage('after');
    await ticks(3);
    deepEq(got, []);
    port1.close(); // a second close does nothing
    eq(closes.length, 2);
  });
  await test('a throwing listener is reported, the others still run', async () => {
    const { port1, port2 } = new MessageChannel();
    const calls = [];
    port2.onmessage = () => { calls.push('first'); throw new Error('a listener threw (expected in the log)'); };
    port2.addEventListener('message', () => calls.push('second'));
    port1.postMessage(1);
    await ticks(3);
    deepEq(calls, ['first', 'second']);
  });
  await test('a message loop ends when the listeners stop', async () => {
    const { port1, port2 } = new MessageChannel();
    let count = 0;
    port1.onmessage = (e) => { count++; if (e.data < 100) port1.postMessage(e.data + 1); };
    port2.onmessage = (e) => port2.postMessage(e.data + 1);
    port2.postMessage(0);
    const last = nextMessage(port1);
    await last;
    await ticks(250);
    eq(count, 51, 'ping-pong to 100');
  });
});
