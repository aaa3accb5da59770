// DistributedLock.MongoDB under the two scenarios mongolock-bench compares it on:
//   cycle URI SECONDS
//       one task, acquire + release in a loop; prints "cycles_per_s X median_us Y p99_us Z"
//   child URI COLLECTION NAME WORKERS HOLD_MS THINK_MS SECONDS OUTFILE
//       WORKERS tasks contend for NAME; writes "acquired_ns released_ns pid.worker" lines and
//       "commands N" (commands the driver sent, from its command events), the format
//       mongolock-bench merges for its own children.
using System.Diagnostics;
using Medallion.Threading.MongoDB;
using MongoDB.Driver;
using MongoDB.Driver.Core.Events;

static long NowNs() => (long)(Stopwatch.GetTimestamp() * (1e9 / Stopwatch.Frequency));  // CLOCK_MONOTONIC on Linux

long commands = 0;
IMongoDatabase Connect(string uri) {
  var settings = MongoClientSettings.FromConnectionString(uri);
  settings.WriteConcern = WriteConcern.WMajority;  // as mongolock
  settings.ClusterConfigurator = cb => cb.Subscribe<CommandStartedEvent>(e => {
    if (e.CommandName is not ("hello" or "isMaster" or "ping" or "endSessions")) Interlocked.Increment(ref commands);
  });
  return new MongoClient(settings).GetDatabase("mongolock_bench");
}

if (args.Length >= 3 && args[0] == "cycle") {
  var db = Connect(args[1]);
  var seconds = int.Parse(args[2]);
  var @lock = new MongoDistributedLock("peer-cycle-" + Environment.ProcessId, db);
  var lat = new List<double>();
  var sw = Stopwatch.StartNew();
  while (sw.Elapsed.TotalSeconds < seconds) {
    var t0 = NowNs();
    await using (await @lock.AcquireAsync()) { }
    lat.Add((NowNs() - t0) / 1e3);
  }
  lat.Sort();
  Console.WriteLine($"cycles_per_s {lat.Count / sw.Elapsed.TotalSeconds} median_us {lat[lat.Count / 2]} p99_us {lat[(int)(lat.Count * 0.99)]}");
  return 0;
}
if (args.Length >= 9 && args[0] == "child") {
  var (uri, collection, name) = (args[1], args[2], args[3]);
  int workers = int.Parse(args[4]), holdMs = int.Parse(args[5]), thinkMs = int.Parse(args[6]), seconds = int.Parse(args[7]);
  var db = Connect(uri);
  var end = DateTime.UtcNow.AddSeconds(seconds);
  var records = new System.Collections.Concurrent.ConcurrentBag<string>();
  var tasks = Enumerable.Range(0, workers).Select(w => Task.Run(async () => {
    var @lock = new MongoDistributedLock(name, db, collection);
    while (DateTime.UtcNow < end) {
      var left = end - DateTime.UtcNow;
      if (left <= TimeSpan.Zero) break;
      var handle = await @lock.TryAcquireAsync(left);
      if (handle is null) break;
      var acquired = NowNs();
      await Task.Delay(holdMs);
      var released = NowNs();
      await handle.DisposeAsync();
      records.Add($"{acquired} {released} {Environment.ProcessId}.{w}");
      await Task.Delay(thinkMs);
    }
  })).ToArray();
  await Task.WhenAll(tasks);
  await File.WriteAllLinesAsync(args[8], records.Append($"commands {Interlocked.Read(ref commands)}"));
  return 0;
}
Console.Error.WriteLine("usage: cycle URI SECONDS | child URI COLLECTION NAME WORKERS HOLD_MS THINK_MS SECONDS OUTFILE");
return 64;
