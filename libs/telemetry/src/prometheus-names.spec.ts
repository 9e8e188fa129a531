import { unitSuffix, withUnitSuffix } from './prometheus-names';

describe('Prometheus names with unit suffixes', () => {
  it.each([
    ['http.server.request.duration', 's', false, 'http_server_request_duration_seconds'],
    ['rpc.server.call.duration', 's', false, 'rpc_server_call_duration_seconds'],
    ['v8js.gc.duration', 's', false, 'v8js_gc_duration_seconds'],
    ['nodejs.eventloop.delay.p99', 's', true, 'nodejs_eventloop_delay_p99_seconds'],
    ['nodejs.eventloop.time', 's', false, 'nodejs_eventloop_time_seconds'],
    ['v8js.memory.heap.used', 'By', true, 'v8js_memory_heap_used_bytes'],
    ['v8js.memory.heap.space.available_size', 'By', true, 'v8js_memory_heap_space_available_size_bytes'],
    ['nodejs.eventloop.utilization', '1', true, 'nodejs_eventloop_utilization_ratio'],
    ['v8js.resource.active', '{resource}', true, 'v8js_resource_active'],
    ['tickwork.fire.enqueue_lateness_seconds', 's', false, 'tickwork_fire_enqueue_lateness_seconds'],
    ['tickwork.fires.claimed', undefined, false, 'tickwork_fires_claimed'],
    ['tickwork.fires.claimed', '1', false, 'tickwork_fires_claimed'],
    ['net.io', 'By/s', false, 'net_io_bytes_per_second'],
  ])('%s (unit %s, gauge %s) is %s', (name, unit, gauge, expected) => {
    expect(withUnitSuffix(name, unit, gauge)).toBe(expected);
  });

  it('leaves unknown units as they are, sanitized', () => {
    expect(unitSuffix('requests', false)).toBe('requests');
    expect(unitSuffix('', true)).toBe('');
  });
});
