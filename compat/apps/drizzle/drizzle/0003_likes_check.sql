PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_posts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`author_id` integer NOT NULL,
	`title` text NOT NULL,
	`likes` integer DEFAULT 0 NOT NULL,
	`tag` text,
	FOREIGN KEY (`author_id`) REFERENCES `authors`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "likes_positive" CHECK("__new_posts"."likes" >= 0)
);
--> statement-breakpoint
INSERT INTO `__new_posts`("id", "author_id", "title", "likes", "tag") SELECT "id", "author_id", "title", "likes", "tag" FROM `posts`;--> statement-breakpoint
DROP TABLE `posts`;--> statement-breakpoint
ALTER TABLE `__new_posts` RENAME TO `posts`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `posts_author_idx` ON `posts` (`author_id`);
