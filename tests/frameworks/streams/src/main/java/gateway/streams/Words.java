package gateway.streams;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/** The deterministic input: line i of the input and the true word counts of lines [0, n). */
final class Words {
    static final String[] VOCAB = {
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliett", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
        "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu",
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "gateway",
    };

    private Words() {}

    /** Indices of the words of line i: 1 to 7 of them, spread unevenly over VOCAB. */
    static int[] wordsOf(long i) {
        int n = 1 + (int) (i % 7);
        int[] w = new int[n];
        for (int j = 0; j < n; j++) {
            w[j] = (int) ((i * 31 + (long) j * j * 17 + i / 13) % VOCAB.length);
        }
        return w;
    }

    /** The text of line i: mixed case and separators, which the app's split undoes. */
    static String line(long i) {
        StringBuilder sb = new StringBuilder();
        int[] w = wordsOf(i);
        for (int j = 0; j < w.length; j++) {
            if (j > 0) sb.append(j % 3 == 0 ? ", " : j % 3 == 1 ? " " : " - ");
            String word = VOCAB[w[j]];
            sb.append((i + j) % 4 == 0 ? word.toUpperCase(Locale.ROOT) : word);
        }
        return (i % 5 == 0 ? "  " : "") + sb + (i % 3 == 0 ? "." : "");
    }

    /** The true count of every word over lines [0, n), counted from the indices, not the text. */
    static Map<String, Long> expected(long n) {
        Map<String, Long> counts = new TreeMap<>();
        for (long i = 0; i < n; i++) {
            for (int w : wordsOf(i)) counts.merge(VOCAB[w], 1L, Long::sum);
        }
        return counts;
    }
}
