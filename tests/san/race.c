/* make tsan's check of its own report path: two threads bump one counter without a lock, a data
 * race ThreadSanitizer reports. Run by race.t in the background with its output and exit status
 * thrown away, as a test does with a daemon it stops, so the file passes on its own; make tsan
 * requires tests/run-all to fail it all the same (from the report in PADDOCK_SANITIZER_REPORTS). */
#include <pthread.h>
#include <stdio.h>

static int counter;

static void *bump(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) counter++;
  return NULL;
}

int main(void) {
  pthread_t a, b;
  pthread_create(&a, NULL, bump, NULL);
  pthread_create(&b, NULL, bump, NULL);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("%d\n", counter);
  return 0;
}
