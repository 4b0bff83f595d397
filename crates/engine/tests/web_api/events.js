// Event and EventTarget.

export default suite(async () => {
  await test('Event basics', () => {
    const e = new Event('ping');
    eq(e.type, 'ping');
    eq(e.bubbles, false);
    eq(e.cancelable, false);
    eq(e.composed, false);
    eq(e.defaultPrevented, false);
    eq(e.isTrusted, false);
    eq(e.target, null);
    eq(e.currentTarget, null);
    eq(e.eventPhase, Event.NONE);
    eq(typeof e.timeStamp, 'number');
    deepEq(e.composedPath(), []);
    const c = new Event('x', { cancelable: true, bubbles: true });
    eq(c.bubbles, true);
    c.preventDefault();
    eq(c.defaultPrevented, true, 'cancelable: preventDefault works');
    eq(c.returnValue, false);
    const n = new Event('x');
    n.preventDefault();
    eq(n.defaultPrevented, false, 'not cancelable: ignored');
    throws(() => new Event(), TypeError, 'type required');
    eq(Event.AT_TARGET, 2);
    eq(new Event('x').BUBBLING_PHASE, 3, 'constants on instances too');
    eq(Object.prototype.toString.call(e), '[object Event]');
  });
  await test('dispatch, listener order, this, target', () => {
    const t = new EventTarget();
    const log = [];
    function a(ev) { log.push(['a', this === t, ev.target === t, ev.currentTarget === t, ev.eventPhase]); }
    t.addEventListener('x', a);
    t.addEventListener('x', () => log.push('b'));
    t.addEventListener('x', a); // duplicate ignored
    const ev = new Event('x');
    eq(t.dispatchEvent(ev), true);
    deepEq(log, [['a', true, true, true, 2], 'b']);
    eq(ev.eventPhase, 0, 'phase reset after dispatch');
    eq(ev.currentTarget, null);
    eq(ev.target, t, 'target stays');
    t.removeEventListener('x', a);
    log.length = 0;
    t.dispatchEvent(new Event('x'));
    deepEq(log, ['b']);
  });
  await test('capture flag distinguishes listeners', () => {
    const t = new EventTarget();
    let n = 0;
    const f = () => n++;
    t.addEventListener('x', f);
    t.addEventListener('x', f, true);
    t.dispatchEvent(new Event('x'));
    eq(n, 2);
    t.removeEventListener('x', f, { capture: true });
    t.dispatchEvent(new Event('x'));
    eq(n, 3);
  });
  await test('once, signal, handleEvent objects', () => {
    const t = new EventTarget();
    let once = 0;
    t.addEventListener('x', () => once++, { once: true });
    t.dispatchEvent(new Event('x'));
    t.dispatchEvent(new Event('x'));
    eq(once, 1, 'once');
    const ac = new AbortController();
    let sig = 0;
    t.addEventListener('x', () => sig++, { signal: ac.signal });
    t.dispatchEvent(new Event('x'));
    ac.abort();
    t.dispatchEvent(new Event('x'));
    eq(sig, 1, 'removed on abort');
    let never = 0;
    t.addEventListener('x', () => never++, { signal: AbortSignal.abort() });
    t.dispatchEvent(new Event('x'));
    eq(never, 0, 'already-aborted signal: not added');
    const obj = { n: 0, handleEvent(ev) { this.n++; assert(this === obj, 'this is the object'); assert(ev.type === 'y', 'event'); } };
    t.addEventListener('y', obj);
    t.dispatchEvent(new Event('y'));
    eq(obj.n, 1, 'handleEvent object');
    t.addEventListener('z', null);
    throws(() => t.addEventListener('z', 'nope'), TypeError, 'string listener');
    throws(() => t.addEventListener('z', () => {}, { signal: {} }), TypeError, 'bad signal');
    throws(() => t.addEventListener('z'), TypeError, 'missing listener');
  });
  await test('stopImmediatePropagation and preventDefault', () => {
    const t = new EventTarget();
    const log = [];
    t.addEventListener('x', (e) => { log.push(1); e.stopImmediatePropagation(); });
    t.addEventListener('x', () => log.push(2));
    t.dispatchEvent(new Event('x'));
    deepEq(log, [1]);
    const u = new EventTarget();
    u.addEventListener('c', (e) => e.preventDefault());
    eq(u.dispatchEvent(new Event('c', { cancelable: true })), false, 'dispatchEvent returns false when canceled');
    const passive = new EventTarget();
    passive.addEventListener('c', (e) => e.preventDefault(), { passive: true });
    eq(passive.dispatchEvent(new Event('c', { cancelable: true })), true, 'passive listeners cannot cancel');
  });
  await test('listener errors are reported, not thrown; dispatch continues', () => {
    const t = new EventTarget();
    let after = false;
    t.addEventListener('x', () => { throw new Error('listener error (expected in the log)'); });
    t.addEventListener('x', () => { after = true; });
    eq(t.dispatchEvent(new Event('x')), true);
    eq(after, true);
  });
  await test('dispatch errors', () => {
    const t = new EventTarget();
    throws(() => t.dispatchEvent({ type: 'x' }), TypeError, 'not an Event');
    throws(() => t.dispatchEvent(), TypeError, 'no argument');
    const ev = new Event('x');
    t.addEventListener('x', () => {
      throws(() => t.dispatchEvent(ev), 'InvalidStateError', 're-dispatch while dispatching');
    });
    t.dispatchEvent(ev);
    t.dispatchEvent(ev); // re-dispatching afterwards is fine
    throws(() => EventTarget.prototype.addEventListener.call({}, 'x', () => {}), TypeError, 'brand check');
  });
  await test('subclassing', () => {
    class Thing extends EventTarget {
      ping() { return this.dispatchEvent(new CustomishEvent('ping', 7)); }
    }
    class CustomishEvent extends Event {
      constructor(type, n) { super(type); this.n = n; }
    }
    const thing = new Thing();
    let got;
    thing.addEventListener('ping', (e) => { got = e.n; });
    thing.ping();
    eq(got, 7);
    assert(thing instanceof EventTarget, 'instanceof');
  });
  await test('the global scope is an event target', () => {
    eq(typeof addEventListener, 'function');
    eq(typeof removeEventListener, 'function');
    eq(typeof dispatchEvent, 'function');
    let n = 0;
    const f = () => n++;
    addEventListener('custom-test', f);
    dispatchEvent(new Event('custom-test'));
    removeEventListener('custom-test', f);
    dispatchEvent(new Event('custom-test'));
    eq(n, 1);
  });
});
