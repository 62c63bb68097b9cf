// The cost of creating many small store objects from many threads, the two ways Store::put_object
// can: staged in tmp/ and renamed into the shard (a cross-directory rename, which the kernel
// serialises across the filesystem), or written as an unnamed O_TMPFILE file in the shard and
// linked in. Each object is fchmod'ed, written, given the objects' mtime and its writeback
// started, as the store does; then one syncfs. bench/README.md ("Fleet") quotes it.
//
//   g++ -O2 -std=c++17 -static -pthread bench/object_create.cpp -o /tmp/object_create
//   /tmp/object_create DIR MODE(0 staged+rename, 1 tmpfile+linkat) COUNT THREADS SIZE
//   WRITEBACK(0|1)
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>
static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
int main(int argc, char** argv) {
    std::string root = argv[1];
    int mode = atoi(argv[2]);
    int n = atoi(argv[3]);
    int threads = atoi(argv[4]);
    int size = atoi(argv[5]);
    int wb = atoi(argv[6]);
    mkdir(root.c_str(), 0755);
    mkdir((root + "/tmp").c_str(), 0755);
    mkdir((root + "/objects").c_str(), 0755);
    for (int s = 0; s < 256; ++s) {
        char b[8];
        snprintf(b, 8, "%02x", s);
        mkdir((root + "/objects/" + b).c_str(), 0755);
    }
    int objfd = open((root + "/objects").c_str(), O_DIRECTORY | O_RDONLY);
    std::vector<char> data(size, 'x');
    std::atomic<int> next{0};
    double t0 = now();
    auto work = [&](int tid) {
        for (;;) {
            int i = next++;
            if (i >= n) break;
            char rel[64];
            snprintf(rel, 64, "%02x/obj%08d-%d", i % 256, i, tid);
            if (mode == 0) {
                std::string staged = root + "/tmp/object-" + std::to_string(i);
                int fd = open(staged.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
                fchmod(fd, 0444);
                if (write(fd, data.data(), size) != size) abort();
                struct timespec ts[2] = {{1, 0}, {1, 0}};
                futimens(fd, ts);
                if (wb) sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
                close(fd);
                std::string dest = root + "/objects/" + rel;
                if (renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, dest.c_str(), RENAME_NOREPLACE) !=
                    0) {
                    perror("rename");
                    abort();
                }
            } else {
                char dir[8];
                snprintf(dir, 8, "%02x", i % 256);
                int fd = openat(objfd, dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0444);
                if (fd < 0) {
                    perror("O_TMPFILE");
                    abort();
                }
                fchmod(fd, 0444);
                if (write(fd, data.data(), size) != size) abort();
                struct timespec ts[2] = {{1, 0}, {1, 0}};
                futimens(fd, ts);
                if (wb) sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
                char proc[64];
                snprintf(proc, 64, "/proc/self/fd/%d", fd);
                if (linkat(AT_FDCWD, proc, objfd, rel, AT_SYMLINK_FOLLOW) != 0) {
                    perror("linkat");
                    abort();
                }
                close(fd);
            }
        }
    };
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
        ts.emplace_back(work, t);
    for (auto& t : ts)
        t.join();
    double t1 = now();
    syncfs(objfd);
    double t2 = now();
    printf("mode=%s n=%d threads=%d size=%d wb=%d: create %.3f s, syncfs %.3f s\n",
           mode ? "tmpfile+linkat" : "staged+rename", n, threads, size, wb, t1 - t0, t2 - t1);
}
